"""Exercises 2 and 3: the causal and padding masks, and the heads' split and merge."""

from __future__ import annotations

import torch

import transformer_lab as tl

from .core import Exercise, Mistake, Part, Property
from .inputs import B, D, H, K, PAD, S, T, generator, padded_tokens, randn

# --------------------------------------------------------------------------- 2 masks


def run_causal(ns, rec):
    for size in (T, 1, S):
        rec(f"causal_mask({size})", lambda: ns.causal_mask(size))


def run_padding(ns, rec):
    tokens = padded_tokens(generator())
    rec.watch(tokens=tokens)
    rec(f"padding_mask(tokens {tuple(tokens.shape)}, pad_id={PAD})", lambda: ns.padding_mask(tokens, PAD))
    rec("padding_mask(tokens, pad_id=5)", lambda: ns.padding_mask(tokens, 5))
    rec("batch size 1: padding_mask(tokens (1, 7), pad_id=5)", lambda: ns.padding_mask(tokens[1:], 5))


def _causal(build):
    def causal_mask(size, device=None):
        return build(torch.ones(size, size, dtype=torch.bool, device=device))
    return causal_mask


def _padding(build):
    def padding_mask(tokens, pad_id):
        return build(tokens, pad_id)
    return padding_mask


def _causal_holds(ns) -> bool:
    mask = ns.causal_mask(T)
    return all(bool(mask[i, j]) == (j <= i) for i in range(T) for j in range(T))


def _padding_holds(ns) -> bool:
    tokens = padded_tokens(generator())
    mask = ns.padding_mask(tokens, PAD)
    return bool((mask.expand(B, H, T, S) == (tokens != PAD)[:, None, None, :]).all())


SHAPE_HINT = "a test that the mask has shape (B, 1, 1, S), so that it broadcasts against scores (B, H, T, S)"
MASKS = Exercise(2, "ex02_masks", "causal and padding masks", "masks",
                 {"causal_mask": tl.causal_mask, "padding_mask": tl.padding_mask}, (
    Part("causal_mask", run_causal, tl.causal_mask, mistakes=(
        Mistake("diagonal excluded", "the mask hides the diagonal (tril(-1)), so a token may not see itself "
                "and the first position sees nothing; position i may attend to 0..i.",
                "mistakes-mask-residual", {"causal_mask": _causal(lambda m: m.tril(-1))},
                hint="a test that every position may attend to itself (the diagonal is True)"),
        Mistake("sees the next token", "the mask is off by one (tril(1)): each position sees the next token, "
                "the answer it must predict; training loss falls to near zero and inference fails.",
                "mistakes-mask-residual", {"causal_mask": _causal(lambda m: m.tril(1))},
                hint="a test that query i may not attend to key i + 1"),
        Mistake("causal mask inverted", "the mask is True on the future (triu(1), True = hidden); in this "
                "project True means may attend.", "masks", {"causal_mask": _causal(lambda m: m.triu(1))},
                hint="a test that query 0 may attend to key 0 and to no other"),
        Mistake("float mask", "the mask holds 0./1. floats; the project's masks are boolean, True = may "
                "attend (a float mask would be added to the scores).", "masks",
                {"causal_mask": _causal(lambda m: m.float().tril())},
                hint="a test that the mask's dtype is torch.bool"),
        Mistake("triu instead of tril", "the mask keeps the upper triangle (triu()), so each position sees "
                "itself and every later one, the future; the lower triangle, tril(), lets query i see keys "
                "0..i.", "causal", {"causal_mask": _causal(lambda m: m.triu())},
                hint="a test that query i may attend to key j exactly when j <= i (the last query sees every key)"),
    ), properties=(
        Property("query i may attend to key j exactly when j <= i", _causal_holds),
    )),
    Part("padding_mask", run_padding, tl.padding_mask, mistakes=(
        Mistake("padding mask inverted", "the mask is True at the padding; True means may attend, so it must "
                "be tokens != pad_id.", "masks",
                {"padding_mask": _padding(lambda t, p: (t == p)[:, None, None, :])},
                hint="a test that no query may attend to a padding position and every query to a real token"),
        Mistake("padding mask of shape (B, S)", "the mask has shape (B, S); the package returns "
                "(B, 1, 1, S) so that it broadcasts over the heads and queries of the scores (B, H, T, S).",
                "masks", {"padding_mask": _padding(lambda t, p: t != p)}, hint=SHAPE_HINT),
        Mistake("padding mask hides queries", "the mask has shape (B, 1, S, 1), which hides padding "
                "queries; padding must be hidden as keys, (B, 1, 1, S).", "masks",
                {"padding_mask": _padding(lambda t, p: (t != p)[:, None, :, None])}, hint=SHAPE_HINT),
        Mistake("padding mask of shape (B, 1, S)", "the mask has shape (B, 1, S), the Annotated "
                "Transformer's, whose attention adds the head axis itself; here the scores are (B, H, T, S) "
                "and a (B, 1, S) mask would broadcast B against the heads: return (B, 1, 1, S).", "masks",
                {"padding_mask": _padding(lambda t, p: (t != p).unsqueeze(-2))}, hint=SHAPE_HINT),
    ), properties=(
        Property("no query may attend to a padding key, every query to the others", _padding_holds),
    )),
))

# --------------------------------------------------------------------------- 3 heads


def run_split(ns, rec):
    g = generator()
    module = rec.call(f"MultiHeadAttention({D}, {H})", lambda: ns.MultiHeadAttention(D, H))
    x, x2 = randn(g, B, S, D), randn(g, B, T, H * 2)
    rec.watch(x=x, x2=x2)
    rec("split_heads(x (2, 7, 12), head_dim=4)", lambda: module.split_heads(x, K))
    rec("split_heads(x (2, 5, 6), head_dim=2)", lambda: module.split_heads(x2, 2))
    rec("batch size 1: split_heads(x (1, 7, 12), head_dim=4)", lambda: module.split_heads(x[:1], K))


def run_merge(ns, rec):
    g = generator(2)
    module = rec.call(f"MultiHeadAttention({D}, {H})", lambda: ns.MultiHeadAttention(D, H))
    y, y2 = randn(g, B, H, T, K), randn(g, B, H, S, 2)
    rec.watch(x=y, x2=y2)
    rec("merge_heads(heads (2, 3, 5, 4))", lambda: module.merge_heads(y))
    rec("merge_heads(heads (2, 3, 7, 2))", lambda: module.merge_heads(y2))
    rec("batch size 1: merge_heads(heads (1, 3, 5, 4))", lambda: module.merge_heads(y[:1]))


class _SplitNoTranspose(tl.MultiHeadAttention):
    def split_heads(self, x, head_dim):
        batch, length, _ = x.shape
        return x.reshape(batch, self.num_heads, length, head_dim)  # (B, H, L, hd), positions mixed in


class _SplitBatchAxis(tl.MultiHeadAttention):
    def split_heads(self, x, head_dim):
        batch, length, _ = x.shape
        return super().split_heads(x, head_dim).reshape(batch * self.num_heads, length, head_dim)


class _SplitStrided(tl.MultiHeadAttention):
    def split_heads(self, x, head_dim):
        batch, length, _ = x.shape
        return x.view(batch, length, head_dim, self.num_heads).permute(0, 3, 1, 2)  # every H-th feature


class _MergeNoTranspose(tl.MultiHeadAttention):
    def merge_heads(self, x):
        batch, heads, length, head_dim = x.shape
        return x.reshape(batch, length, heads * head_dim)


class _MergeInterleaved(tl.MultiHeadAttention):
    def merge_heads(self, x):
        batch, heads, length, head_dim = x.shape
        return x.permute(0, 2, 3, 1).reshape(batch, length, head_dim * heads)  # (B, T, Kv*H): features interleaved


class _MergeAlongPositions(tl.MultiHeadAttention):
    def merge_heads(self, x):
        return torch.cat(x.unbind(1), dim=1)  # (B, H*T, Kv)


def _round_trip(ns) -> bool:
    module, x = ns.MultiHeadAttention(D, H), randn(generator(), B, S, D)
    return torch.equal(module.merge_heads(module.split_heads(x, K)), x)


def _head_slices(ns) -> bool:
    x = randn(generator(), B, S, D)
    heads = ns.MultiHeadAttention(D, H).split_heads(x, K)
    return all(torch.equal(heads[:, h], x[..., h * K : (h + 1) * K]) for h in range(H))


PARITY_HINT = ("a test that the module equals torch.nn.MultiheadAttention holding the same weights "
               "(in_proj_weight is w_q, w_k, w_v stacked; its key_padding_mask is True where padding is)")
SPLIT_NO_TRANSPOSE = Mistake(
    "heads on the sequence axis", "split_heads reshapes (B, L, H*K) straight to (B, H, L, K), so each head "
    "holds pieces of several positions; view as (B, L, H, K), then transpose to (B, H, L, K).",
    "mistakes-heads-sincos", {"MultiHeadAttention": _SplitNoTranspose},
    hint="a test that self-attention without a mask is permutation-equivariant, or " + PARITY_HINT)
MERGE_NO_TRANSPOSE = Mistake(
    "merged without the transpose", "merge_heads reshapes (B, H, T, Kv) straight to (B, T, H*Kv), mixing "
    "the features of different positions into one row; transpose to (B, T, H, Kv) first.",
    "mistakes-heads-sincos", {"MultiHeadAttention": _MergeNoTranspose}, hint=PARITY_HINT)
MERGE_INTERLEAVED = Mistake(
    "heads merged interleaved", "merge_heads orders the features (Kv, H), feature j of every head side by "
    "side; Concat(head_1, ..., head_h) puts each head's Kv features in one block: transpose to "
    "(B, T, H, Kv), then reshape.", "heads", {"MultiHeadAttention": _MergeInterleaved}, hint=PARITY_HINT)
HEADS = Exercise(3, "ex03_heads", "splitting and merging heads", "heads",
                 {"MultiHeadAttention": tl.MultiHeadAttention}, (
    Part("split_heads", run_split, tl.MultiHeadAttention.split_heads, mistakes=(
        SPLIT_NO_TRANSPOSE,
        Mistake("heads on the batch axis", "the heads are folded into the batch axis, (B*H, L, K); the "
                "package keeps them on an axis of their own, (B, H, L, K), so that a (B, 1, 1, S) mask "
                "broadcasts over them.", "heads", {"MultiHeadAttention": _SplitBatchAxis}),
        Mistake("every H-th feature", "head h gets features h, h+H, h+2H, ...; it owns the contiguous "
                "slice h*K .. (h+1)*K - 1 (view as (B, L, H, K), not (B, L, K, H)).", "heads",
                {"MultiHeadAttention": _SplitStrided}),
    ), properties=(
        Property("head h holds features h*K .. (h+1)*K - 1 of every position", _head_slices),
    )),
    Part("merge_heads", run_merge, tl.MultiHeadAttention.merge_heads, mistakes=(
        MERGE_NO_TRANSPOSE,
        MERGE_INTERLEAVED,
        Mistake("heads concatenated along positions", "merge_heads concatenates the heads along the "
                "positions, (B, H*T, Kv); Concat(head_1, ..., head_h) joins them along the features.",
                "heads", {"MultiHeadAttention": _MergeAlongPositions}),
    ), properties=(
        Property("merge_heads(split_heads(x)) == x", _round_trip),
    )),
))
