"""Exercise 10: the decoder layer, with cross-attention and the decoding caches."""

from __future__ import annotations

import torch

import transformer_lab as tl

from .core import Exercise, Mistake, Part, Property
from .inputs import B, D, PAD, S, T, generator, padded_tokens, randn
from .layers import (LAYER_CASES, NO_FFN_RESIDUAL, NO_RESIDUAL, SWAPPED, _layer_pair, _ln, _NoResidual, _parts,
                     _Swapped)
from .multi_head import same_output
from .stages import layer_stages, residual_layer_words

PARTS = ("attention", "attention", "ffn")


def decoder_inputs(g):
    x, memory = randn(g, B, T, D), randn(g, B, S, D)
    src_mask = (padded_tokens(g) != PAD)[:, None, None, :]  # (B, 1, 1, S)
    return x, memory, src_mask, tl.causal_mask(T)


def run_decoder(ns, rec):
    g = generator()
    parts = _parts(g, *PARTS)
    x, memory, src_mask, tgt_mask = decoder_inputs(g)
    rec.watch(x=x, memory=memory, src_mask=src_mask, tgt_mask=tgt_mask)
    for dropout, norm_first, batch in LAYER_CASES:
        layer, _ = _layer_pair(ns, rec, g, "DecoderLayer", parts, dropout, norm_first)
        torch.manual_seed(5)
        mode = " in training" if dropout else ""
        one = "batch size 1, " if batch == 1 else ""
        rec(f"{one}{_ln(norm_first)}, dropout={dropout}{mode}: forward(x ({batch}, 5, 12), memory ({batch}, 7, 12), "
            f"src_mask ({batch}, 1, 1, 7), tgt_mask (5, 5))",
            lambda: layer(x[:batch], memory[:batch], src_mask[:batch], tgt_mask), module=layer)
    layer, reference = _layer_pair(ns, rec, g, "DecoderLayer", parts, 0.3, False, train=False)
    rec("dropout=0.3 in eval mode: forward(x, memory, src_mask, tgt_mask) equals the output without dropout",
        lambda: same_output(layer(x, memory, src_mask, tgt_mask), reference(x, memory, src_mask, tgt_mask)))
    layer, _ = _layer_pair(ns, rec, g, "DecoderLayer", parts, 0.0, False)
    cache = (tl.KVCache(), tl.KVCache(static=True))
    steps = [rec.call(f"one position at a time with a cache, position {t}",
                      lambda: layer(x[:, t : t + 1], memory, src_mask, None, cache=cache), module=layer)
             for t in range(T)]
    rec("the five positions decoded one at a time with the caches", lambda: torch.cat(steps, dim=1))


class _Dec(tl.DecoderLayer):
    """The package's forward with each call's arguments chosen by the subclass."""

    def calls(self, memory, src_mask, tgt_mask, cache):
        self_cache, cross_cache = cache if cache is not None else (None, None)
        return (tgt_mask, self_cache), (memory, src_mask, cross_cache)

    def self_step(self, x, tgt_mask, self_cache, memory=None):
        h = self.sublayer_input(x, self.norm1)
        return self.residual(x, self.self_attn(h, h, h, mask=tgt_mask, cache=self_cache), self.norm1)

    def cross_step(self, x, memory, src_mask, cross_cache, norm):
        h = self.sublayer_input(x, norm)
        return self.residual(x, self.cross_attn(h, memory, memory, mask=src_mask, cache=cross_cache), norm)

    def ffn_step(self, x):
        h = self.sublayer_input(x, self.norm3)
        return self.residual(x, self.feed_forward(h), self.norm3)

    def forward(self, x, memory, src_mask=None, tgt_mask=None, cache=None):
        (tgt_mask, self_cache), (memory, src_mask, cross_cache) = self.calls(memory, src_mask, tgt_mask, cache)
        x = self.self_step(x, tgt_mask, self_cache, memory)
        x = self.cross_step(x, memory, src_mask, cross_cache, self.norm2)
        return self.ffn_step(x)


class _NoTgtMask(_Dec):
    def calls(self, memory, src_mask, tgt_mask, cache):
        return super().calls(memory, src_mask, None, cache)


class _NoSrcMask(_Dec):
    def calls(self, memory, src_mask, tgt_mask, cache):
        return super().calls(memory, None, tgt_mask, cache)


class _MasksSwapped(_Dec):
    def calls(self, memory, src_mask, tgt_mask, cache):
        return super().calls(memory, tgt_mask, src_mask, cache)


class _NoCache(_Dec):
    def calls(self, memory, src_mask, tgt_mask, cache):
        return super().calls(memory, src_mask, tgt_mask, None)


class _CrossQueriesFromMemory(_Dec):
    def cross_step(self, x, memory, src_mask, cross_cache, norm):
        h = self.sublayer_input(x, norm)
        return self.residual(x, self.cross_attn(memory, h, h, mask=src_mask, cache=cross_cache), norm)


class _SelfReadsMemory(_Dec):
    def self_step(self, x, tgt_mask, self_cache, memory=None):
        h = self.sublayer_input(x, self.norm1)
        return self.residual(x, self.self_attn(h, memory, memory, mask=tgt_mask, cache=self_cache), self.norm1)


class _DecNoFeedForwardResidual(_Dec):
    def ffn_step(self, x):
        h = self.sublayer_input(x, self.norm3)
        return _NoResidual.residual(self, x, self.feed_forward(h), self.norm3)


class _CrossFirst(_Dec):
    def forward(self, x, memory, src_mask=None, tgt_mask=None, cache=None):
        (tgt_mask, self_cache), (memory, src_mask, cross_cache) = self.calls(memory, src_mask, tgt_mask, cache)
        x = self.cross_step(x, memory, src_mask, cross_cache, self.norm1)
        h = self.sublayer_input(x, self.norm2)
        x = self.residual(x, self.self_attn(h, h, h, mask=tgt_mask, cache=self_cache), self.norm2)
        h = self.sublayer_input(x, self.norm3)
        return self.residual(x, self.feed_forward(h), self.norm3)


class _DecSwapped(_Swapped, tl.DecoderLayer):
    pass


class _DecNoResidual(_NoResidual, tl.DecoderLayer):
    pass


def _causal(ns) -> bool:
    g = generator()
    layer = ns.DecoderLayer(D, *_parts(g, *PARTS), 0.0).eval()
    x, memory, src_mask, tgt_mask = decoder_inputs(g)
    edited = x.clone()
    edited[:, 3:] += 1.0  # positions 3 and 4
    before, after = layer(x, memory, src_mask, tgt_mask), layer(edited, memory, src_mask, tgt_mask)
    return torch.allclose(before[:, :3], after[:, :3], atol=1e-6)


def _source_padding_blocks(ns) -> bool:
    g = generator()
    layer = ns.DecoderLayer(D, *_parts(g, *PARTS), 0.0).eval()
    x, memory, src_mask, tgt_mask = decoder_inputs(g)
    edited = memory.clone()
    edited[1, -2:] += 1.0  # the padded source positions of example 1
    before, after = layer(x, memory, src_mask, tgt_mask), layer(x, edited, src_mask, tgt_mask)
    return torch.allclose(before, after, atol=1e-6)


SHAPES_HINT = ("any test that calls the layer with a memory longer than the target (S != T), a (T, T) "
               "tgt_mask and a (B, 1, 1, S) src_mask, and checks the output's shape (B, T, D)")
PARITY = ("a test that the layer equals torch.nn.TransformerDecoderLayer holding the same weights (eval mode, "
          "post-LN and norm_first=True)")
DECODER_SUBLAYERS = (("self_attn", "the masked self-attention"), ("cross_attn", "the cross-attention"),
                     ("feed_forward", "the feed-forward network"))
DECODER = Exercise(10, "ex10_decoder_layer", "decoder layer (with cross-attention)", "decoder",
                   {"DecoderLayer": tl.DecoderLayer}, (
    Part("DecoderLayer", run_decoder, tl.DecoderLayer, mistakes=(
        Mistake("tgt_mask not used", "the self-attention is called without tgt_mask, so each position sees "
                "the later ones, the tokens it must predict.", "causality", {"DecoderLayer": _NoTgtMask},
                hint="a test of causality: editing target positions 3 and 4 changes nothing at positions 0-2"),
        Mistake("src_mask not used", "the cross-attention is called without src_mask, so the decoder attends "
                "to the source padding.", "three-uses", {"DecoderLayer": _NoSrcMask},
                hint="a test that editing the memory at padded source positions changes nothing"),
        Mistake("masks swapped", "src_mask goes to the self-attention and tgt_mask to the cross-attention; "
                "the causal tgt_mask shapes the self-attention, the source padding mask the cross-attention.",
                "decoder", {"DecoderLayer": _MasksSwapped}, hint=SHAPES_HINT),
        Mistake("cross-attention first", "the cross-attention runs before the masked self-attention; Section "
                "3.1 orders them self-attention, cross-attention, feed-forward.", "decoder",
                {"DecoderLayer": _CrossFirst}, hint=PARITY),
        Mistake("caches not passed on", "the caches are not handed to the attention modules, so a position "
                "decoded alone sees no earlier one; pass cache[0] to self_attn and cache[1] to cross_attn.",
                "kv-cache", {"DecoderLayer": _NoCache},
                hint="a test that decoding one position at a time with (KVCache(), KVCache(static=True)) equals "
                     "the whole target at once"),
        Mistake(SWAPPED.name, SWAPPED.says, SWAPPED.slide, {"DecoderLayer": _DecSwapped}, hint=PARITY),
        Mistake(NO_RESIDUAL.name, NO_RESIDUAL.says, NO_RESIDUAL.slide, {"DecoderLayer": _DecNoResidual},
                hint=PARITY),
        Mistake(NO_FFN_RESIDUAL.name, NO_FFN_RESIDUAL.says, NO_FFN_RESIDUAL.slide,
                {"DecoderLayer": _DecNoFeedForwardResidual}, hint=PARITY),
        Mistake("cross-attention queries from the memory", "the cross-attention is called (memory, x, x): "
                "its queries come from the encoder and its keys and values from the target; Section 3.2.3 "
                "takes the queries from the previous decoder sub-layer and the keys and values from the "
                "memory, cross_attn(h, memory, memory).", "three-uses",
                {"DecoderLayer": _CrossQueriesFromMemory}, hint=SHAPES_HINT),
        Mistake("self-attention reads the memory", "the self-attention takes its keys and values from the "
                "memory; in the decoder's self-attention queries, keys and values all come from the target, "
                "self_attn(h, h, h).", "three-uses", {"DecoderLayer": _SelfReadsMemory}, hint=SHAPES_HINT),
    ), properties=(
        Property("causality: editing positions 3 and 4 changes nothing at positions 0-2", _causal),
        Property("editing the padded source positions changes nothing", _source_padding_blocks),
    ), stages=layer_stages(("self_attn", "norm1", "cross_attn", "norm2", "feed_forward", "norm3"),
                           residual_layer_words(DECODER_SUBLAYERS))),
))
