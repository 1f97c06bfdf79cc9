"""Exercises 13 and 14: the key/value cache with greedy decoding, and beam search with the
length penalty, on a small random model (seeded) whose outputs end at different steps."""

from __future__ import annotations

from functools import partial

import torch

import transformer_lab as tl

from .core import Exercise, Mistake, Part, Property
from .inputs import BOS, EOS, PAD, generator, randn, seeded

SRC_VOCAB, TGT_VOCAB = 13, 11


def small_model(seed: int, eos_bias: float) -> tl.Transformer:
    """A random model (d_model 12, 3 heads, 2 layers) with an untied, sharpened output
    layer, so that its choices depend on the whole prefix; ``eos_bias`` sets how soon
    rows end."""
    def build():
        config = tl.TransformerConfig(src_vocab_size=SRC_VOCAB, tgt_vocab_size=TGT_VOCAB, d_model=12,
                                      num_heads=3, d_ff=20, num_layers=2, max_len=64, dropout=0.0,
                                      tie_embeddings=False)
        return tl.Transformer(config).eval()
    model = seeded(seed, build)
    with torch.no_grad():
        model.output_projection.weight.mul_(3.0)
        model.output_projection.bias[EOS] += eos_bias
    model.decode = _limited(model.decode, DECODE_LIMIT)  # a loop that never stops is reported, not hung
    return model


DECODE_LIMIT = 200  # a correct answer calls model.decode at most max_len times per decoding


def _limited(decode, limit: int):
    calls = 0

    def counted(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls > limit:
            raise RuntimeError(f"model.decode was called more than {limit} times on one model: does your loop "
                               f"stop at max_len?")
        return decode(*args, **kwargs)
    return counted


def source(seed: int = 1):
    src = torch.randint(3, SRC_VOCAB, (2, 7), generator=generator(seed))
    src[1, -2:] = PAD
    return src


# --------------------------------------------------------------------------- 13 cache + greedy


def run_cache(ns, rec):
    g = generator()
    k1, v1, k2, v2 = randn(g, 2, 3, 4, 4), randn(g, 2, 3, 4, 2), randn(g, 2, 3, 1, 4), randn(g, 2, 3, 1, 2)
    rec.watch(k=k1, v=v1)
    rec.watch(k=k2, v=v2)
    one = rec.call("KVCache()", lambda: ns.KVCache())
    rec("batch size 1: KVCache().update(k (1, 3, 4, 4), v (1, 3, 4, 2))", lambda: one.update(k1[:1], v1[:1]))
    rec("then update(k (1, 3, 1, 4), v (1, 3, 1, 2))", lambda: one.update(k2[:1], v2[:1]))
    cache = rec.call("KVCache()", lambda: ns.KVCache())
    rec("KVCache().update(k (2, 3, 4, 4), v (2, 3, 4, 2))", lambda: cache.update(k1, v1))
    rec("then update(k (2, 3, 1, 4), v (2, 3, 1, 2))", lambda: cache.update(k2, v2))
    rec("then (cache.k, cache.v)", lambda: (cache.k, cache.v))
    static = rec.call("KVCache(static=True)", lambda: ns.KVCache(static=True))
    rec("KVCache(static=True).update(k (2, 3, 4, 4), v (2, 3, 4, 2))", lambda: static.update(k1, v1))
    rec("then update(k (2, 3, 1, 4), v (2, 3, 1, 2)) on the static cache", lambda: static.update(k2, v2))
    model, src = small_model(1, 0.0), source()
    tgt = torch.randint(3, TGT_VOCAB, (2, 6), generator=g)
    rec.watch(tgt=tgt)
    src_mask = model.src_mask(src)
    memory = model.encode(src, src_mask)
    caches = rec.call("a DecoderCache of your KVCaches",
                      lambda: tl.DecoderCache([(ns.KVCache(), ns.KVCache(static=True)) for _ in range(2)]))
    steps = [rec.call(f"model.decode of target position {t} with your caches",
                      lambda: model.decode(tgt[:, t : t + 1], memory, src_mask, cache=caches)) for t in range(6)]
    rec("a model's logits (2, 6, 11), decoded one position at a time with your caches",
        lambda: torch.cat(steps, dim=1))


class _Cache(tl.KVCache):
    pass


class _AlongHeads(_Cache):
    def update(self, k, v):
        if not self.static and self.k is not None:
            k, v = torch.cat([self.k, k], dim=1), torch.cat([self.v, v], dim=1)
        self.k, self.v = k, v
        return k, v


class _AlongFeatures(_Cache):
    def update(self, k, v):
        if not self.static and self.k is not None:
            k, v = torch.cat([self.k, k], dim=-1), torch.cat([self.v, v], dim=-1)
        self.k, self.v = k, v
        return k, v


class _Replaced(_Cache):
    def update(self, k, v):
        self.k, self.v = k, v
        return k, v


class _StaticAppends(_Cache):
    def update(self, k, v):
        if self.k is not None:
            k, v = torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)
        self.k, self.v = k, v
        return k, v


class _Prepended(_Cache):
    def update(self, k, v):
        if not self.static and self.k is not None:
            k, v = torch.cat([k, self.k], dim=2), torch.cat([v, self.v], dim=2)
        self.k, self.v = k, v
        return k, v


class _NotStored(_Cache):
    def update(self, k, v):
        if self.k is None or self.static:
            self.k, self.v = k, v
            return k, v
        return torch.cat([self.k, k], dim=2), torch.cat([self.v, v], dim=2)


GREEDY_CASES = ((1, 0.0, 9), (5, 1.0, 9), (4, 0.0, 8), (2, 0.0, 1))


def _decode_label(seed, bias, max_len, extra=""):
    return f"greedy_decode(model {seed} (EOS bias {bias}), src (2, 7), max_len={max_len}{extra})"


def run_greedy(ns, rec):
    src = source()
    rec.watch(src=src)
    for seed, bias, max_len in GREEDY_CASES:
        model = small_model(seed, bias)
        rec(_decode_label(seed, bias, max_len), lambda: ns.greedy_decode(model, src, max_len, BOS, EOS))
    seed, bias, max_len = GREEDY_CASES[0]
    model = small_model(seed, bias)
    rec(_decode_label(seed, bias, max_len, ", use_cache=False"),
        lambda: ns.greedy_decode(model, src, max_len, BOS, EOS, use_cache=False))
    model = small_model(seed, bias)
    rec(_decode_label(seed, bias, max_len).replace("src (2, 7)", "batch size 1: src (1, 7)"),
        lambda: ns.greedy_decode(model, src[:1], max_len, BOS, EOS))


@torch.no_grad()
def _greedy(model, src, max_len, bos_id, eos_id, use_cache=True, src_mask=None, *, feed_prefix=False,
            fresh_cache=False, pad_after_eos=True, stop_any=False, pass_src_mask=True, count_new=False,
            last_only=False, squeeze=False):
    """Greedy decoding as the package does it, with one step done another way."""
    src_mask = model.src_mask(src) if src_mask is None else src_mask
    memory = model.encode(src, src_mask)  # (B, S, D)
    tokens = torch.full((src.size(0), 1), bos_id, dtype=torch.long)  # (B, 1)
    finished = torch.zeros(src.size(0), dtype=torch.bool)
    cache = model.new_cache() if use_cache else None
    while tokens.size(1) < max_len + (1 if count_new else 0):
        cache = model.new_cache() if use_cache and fresh_cache else cache
        new = tokens[:, -1:] if (use_cache or last_only) and not feed_prefix else tokens
        logits = model.decode(new, memory, src_mask if pass_src_mask else None, cache=cache)[:, -1]  # (B, V)
        next_token = logits.argmax(dim=-1)
        if pad_after_eos:
            next_token = next_token.masked_fill(finished, model.config.pad_id)
        if squeeze:
            next_token = next_token.squeeze()  # (B,), but () when B = 1
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, L + 1)
        finished |= next_token == eos_id
        if bool(finished.all()) or (stop_any and bool(finished.any())):
            break
    return tokens


def _pad_after_eos(ns) -> bool:
    out = ns.greedy_decode(small_model(5, 1.0), source(), 9, BOS, EOS)
    rows = [row for row in out.tolist() if EOS in row]
    return bool((out[:, 0] == BOS).all()) and all(t == PAD for row in rows for t in row[row.index(EOS) + 1:])


def _greedy_mistake(name, says, slide, **flags):
    return Mistake(name, says, slide, {"greedy_decode": partial(_greedy, **flags)})


GREEDY = Exercise(13, "ex13_greedy_decode", "key/value cache and greedy decoding", "greedy",
                  {"KVCache": tl.KVCache, "greedy_decode": tl.greedy_decode}, (
    Part("KVCache.update", run_cache, tl.KVCache.update, mistakes=(
        Mistake("appended along the heads", "the new keys and values are appended along dim 1 (the heads); "
                "the cache grows along the sequence axis, dim 2 of (B, H, S, K).", "kv-cache",
                {"KVCache": _AlongHeads}),
        Mistake("replaced, not appended", "each update replaces the stored keys and values, so every step "
                "attends to the newest token only; a self-attention cache appends them.", "kv-cache",
                {"KVCache": _Replaced}),
        Mistake("static cache appends", "the static (cross-attention) cache appends too; it holds the "
                "memory's keys and values, computed once, and keeps just those.", "kv-cache",
                {"KVCache": _StaticAppends}),
        Mistake("appended along the features", "the new keys and values are appended along the last axis "
                "(the features); the cache grows along the sequence axis, dim 2 of (B, H, S, K).", "kv-cache",
                {"KVCache": _AlongFeatures}),
        Mistake("new keys first", "the new keys and values are put before the stored ones; they go after "
                "them, in the order of the positions.", "kv-cache", {"KVCache": _Prepended}),
        Mistake("concatenation not stored", "update returns the keys and values with the new ones appended "
                "but does not store them, so the next step has lost this one.", "kv-cache",
                {"KVCache": _NotStored}),
    )),
    Part("greedy_decode", run_greedy, tl.greedy_decode, mistakes=(
        _greedy_mistake("whole prefix fed with the cache", "each step feeds the whole prefix while the cache "
                        "already holds it, so the cache gets every earlier token again; with the cache, "
                        "feed only the last token.", "kv-cache", feed_prefix=True),
        _greedy_mistake("new cache every step", "a fresh cache is made at every step, so the decoder sees "
                        "only the last token; make it once, before the loop.", "kv-cache", fresh_cache=True),
        _greedy_mistake("no padding after EOS", "a row goes on after its EOS; the package fills it with "
                        "pad_id until every row has ended.", "greedy", pad_after_eos=False),
        _greedy_mistake("stops at the first EOS", "decoding stops when one row ends; it goes on until every "
                        "row has produced EOS (or max_len).", "greedy", stop_any=True),
        _greedy_mistake("src_mask not passed to decode", "model.decode gets no src_mask, so the "
                        "cross-attention reads the source padding; pass the mask encode used.", "three-uses",
                        pass_src_mask=False),
        _greedy_mistake("max_len without BOS", "max_len counts the generated tokens only; it bounds the "
                        "whole output, BOS included.", "greedy", count_new=True),
        _greedy_mistake("last token only, without the cache", "with use_cache=False the decoder is fed only "
                        "the last token, so it sees neither the earlier tokens nor their positions; without a "
                        "cache feed the whole prefix, tokens (B, L).", "kv-cache", last_only=True),
        _greedy_mistake("squeeze drops the batch axis", "a bare .squeeze() removes the batch axis too when "
                        "the batch has one row, so one sentence alone fails; squeeze (or index) the axis you "
                        "mean, .squeeze(1) or [:, -1].", "greedy", squeeze=True),
    ), properties=(
        Property("every row starts with BOS and holds only padding after its EOS", _pad_after_eos),
    )),
))
