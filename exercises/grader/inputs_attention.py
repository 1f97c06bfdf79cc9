"""Exercises 1, 5 and 6: equation (1), the token embedding and the positional encoding.
Each mistake is the package's code with one thing done wrong."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import transformer_lab as tl
from transformer_lab.positional_encoding import relative_position_map

from .compare import Claim
from .core import Exercise, Mistake, Part, Property
from .inputs import B, D, H, K, PAD, S, T, V, generator, load_weights, padded_tokens, randn, seeded

# --------------------------------------------------------------------------- 1 attention


def attention_inputs():
    g = generator()
    q, k, v = randn(g, B, H, T, K), randn(g, B, H, S, K), randn(g, B, H, S, 6)
    padding = padded_tokens(g) != PAD  # (B, S)
    masks = {
        "no mask": None,
        "a padding mask (2, 1, 1, 7)": padding[:, None, None, :],
        "a (5, 7) mask": torch.ones(T, S, dtype=torch.bool).tril(2),
        "a (2, 3, 5, 7) mask with an empty row": _with_empty_row(torch.rand(B, H, T, S, generator=g) > 0.4),
    }
    return q, k, v, masks, randn(g, B, H, T, S)


def _with_empty_row(mask):
    mask[:, :, :, 0] = True  # every row sees a key ...
    mask[0, 1, 2] = False  # ... except query 2 of head 1 of example 0
    return mask


PADDING = "a padding mask (2, 1, 1, 7)"


def run_attention_weights(ns, rec):
    q, k, _, masks, bias = attention_inputs()
    rec.watch(query=q, key=k, mask=masks, bias=bias)
    for name, mask in masks.items():
        rec(f"attention_weights(q (2, 3, 5, 4), k (2, 3, 7, 4), {name})", lambda: ns.attention_weights(q, k, mask))
    rec("attention_weights with a bias (2, 3, 5, 7) added to the scores",
        lambda: ns.attention_weights(q, k, masks["a (5, 7) mask"], bias=bias))
    padding = masks[PADDING]
    rec("batch size 1: attention_weights(q (1, 3, 5, 4), k (1, 3, 7, 4), a padding mask (1, 1, 1, 7))",
        lambda: ns.attention_weights(q[:1], k[:1], padding[:1]))
    half_q, half_k = q.half(), k.half()
    rec.watch(query=half_q, key=half_k)
    rec("float16: attention_weights(q, k float16, a padding mask (2, 1, 1, 7))",
        lambda: ns.attention_weights(half_q, half_k, padding))


def _weights(scale_of, fill=None, *, dim=-1, invert=False, after=True, before=True, bias_scaled=False,
             upcast=True):
    """attention_weights with the scale, fill value (None: the dtype's lowest), softmax axis
    and mask handling chosen; half precision takes the softmax in float32, as the package
    does, unless ``upcast`` is False."""
    def attention_weights(query, key, mask=None, *, bias=None):
        scores = query @ key.transpose(-2, -1)  # (..., T, S)
        if bias is not None and bias_scaled:
            scores = scores + bias
        scores = scores / scale_of(query.size(-1))
        if upcast and scores.dtype == torch.float16:
            scores = scores.float()
        if bias is not None and not bias_scaled:
            scores = scores + bias
        if mask is not None and invert:
            mask = ~mask
        if mask is not None and before:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min if fill is None else fill)
        weights = torch.softmax(scores, dim=dim)
        weights = weights * mask if mask is not None and after else weights
        return weights.to(query.dtype)
    return attention_weights


SQRT, MIN = math.sqrt, torch.finfo(torch.float32).min


def _weights_sum_to_one(ns) -> bool:
    q, k, _, masks, _ = attention_inputs()
    mask = masks[PADDING]
    w = ns.attention_weights(q, k, mask)
    return torch.allclose(w.sum(-1), torch.ones(B, H, T), atol=1e-5) and bool((w * ~mask == 0).all())


def _empty_row_is_zero(ns) -> bool:
    q, k, _, masks, _ = attention_inputs()
    w = ns.attention_weights(q, k, masks["a (2, 3, 5, 7) mask with an empty row"])
    return bool((w[0, 1, 2] == 0).all())


P_DROP = 0.5


def run_sdpa(ns, rec):
    q, k, v, masks, _ = attention_inputs()
    rec.watch(query=q, key=k, value=v, mask=masks)
    for name, mask in masks.items():
        rec(f"scaled_dot_product_attention(q, k, v (2, 3, 7, 6), {name})",
            lambda: ns.scaled_dot_product_attention(q, k, v, mask))
    mask = masks[PADDING]
    seen = []
    rec.call("scaled_dot_product_attention(..., on_weights=...)",
             lambda: ns.scaled_dot_product_attention(q, k, v, mask, on_weights=seen.append))
    rec("the weights handed to on_weights", lambda: seen[0] if len(seen) == 1 else f"{len(seen)} calls")
    rec("batch size 1: scaled_dot_product_attention(q (1, 3, 5, 4), k, v (1, 3, 7, 6), a padding mask (1, 1, 1, 7))",
        lambda: ns.scaled_dot_product_attention(q[:1], k[:1], v[:1], mask[:1]))
    # Dropout: with the identity as the values, the output is the dropped weights, so what
    # holds whatever the draw can be checked: each entry is 0 or weight / (1 - p).
    identity = torch.eye(S).expand(B, H, S, S)
    rec.watch(value=identity)
    weights, seen = tl.attention_weights(q, k, mask), []
    label = f"dropout_p={P_DROP}, value = the identity (2, 3, 7, 7), a padding mask"
    out = rec.call(f"scaled_dot_product_attention(q, k, {label}, on_weights=...)",
                   lambda: ns.scaled_dot_product_attention(q, k, identity, mask, P_DROP, on_weights=seen.append))
    rec(f"{label}: the weights handed to on_weights (before dropout)",
        lambda: seen[0] if len(seen) == 1 else f"{len(seen)} calls")
    rec(f"{label}: the factor that scales the kept weights, 1 / (1 - p)", lambda: _kept_scale(out, weights))
    rec(f"{label}: between 25% and 75% of the weights are dropped", lambda: _dropped_share(out, weights))


def _kept_scale(out, weights):
    """What each kept weight was multiplied by (the same factor for all, 1 / (1 - p) = 2 for
    the package), or what else the output holds: whatever the draw."""
    kept = (weights > 0) & (out != 0)
    if not bool(kept.any()):
        return "no weight kept"
    ratios = out[kept] / weights[kept]
    low, high = float(ratios.min()), float(ratios.max())
    if high - low <= 1e-4 * abs(high):
        return round((low + high) / 2, 4)
    return f"the kept weights scaled by different factors, from {low:.3g} to {high:.3g}"


def _dropped_share(out, weights) -> Claim:
    visible = weights > 0
    share = float(((out == 0) & visible).sum()) / float(visible.sum())
    return Claim(0.25 <= share <= 0.75, f"{share:.0%} of the {int(visible.sum())} non-zero weights are dropped "
                                        f"with dropout_p={P_DROP}")


def _sdpa(weights_fn=None, *, call=True, dropout="weights", before_dropout=True):
    """scaled_dot_product_attention as the package computes it on its explicit path, with
    the weights, the on_weights call and the dropout chosen."""
    weights_fn = weights_fn or tl.attention_weights

    def scaled_dot_product_attention(query, key, value, mask=None, dropout_p=0.0, *, bias=None, on_weights=None):
        weights = weights_fn(query, key, mask, bias=bias)
        if on_weights is not None and call and before_dropout:
            on_weights(weights)
        if dropout_p and dropout == "weights":
            weights = F.dropout(weights, dropout_p)
        elif dropout_p and dropout == "not rescaled":
            weights = weights * (torch.rand_like(weights) >= dropout_p)
        if on_weights is not None and call and not before_dropout:
            on_weights(weights)
        return weights @ value
    return scaled_dot_product_attention


MASK_AFTER = Mistake(
    "mask after the softmax", "the mask is applied after the softmax, so each query's weights sum to less "
    "than 1 over the keys it may see; set the masked scores to the lowest value before the softmax.",
    "mistakes-scale-mask", {"attention_weights": _weights(SQRT, before=False)},
    hint="a test that each query's weights sum to 1 over the keys its mask lets it see")
BY_HAND = ("a test against softmax(Q K^T / sqrt(d_k)) computed by hand, or against "
           "F.scaled_dot_product_attention with the identity as the values (its output is then the weights)")
ATTENTION = Exercise(1, "ex01_attention", "attention weights and scaled dot-product attention", "attention", {
    "attention_weights": tl.attention_weights, "scaled_dot_product_attention": tl.scaled_dot_product_attention}, (
    Part("attention_weights", run_attention_weights, tl.attention_weights, mistakes=(
        MASK_AFTER,
        Mistake("divided by d_k", "the scores are divided by d_k instead of sqrt(d_k), so the weights are "
                "too flat; dot products of unit-variance vectors have variance d_k, hence its square root.",
                "mistakes-scale-mask", {"attention_weights": _weights(lambda d: d)}, hint=BY_HAND),
        Mistake("not scaled", "the scores Q K^T are not divided by sqrt(d_k), so for large d_k the softmax "
                "saturates and its gradients vanish.", "why-sqrt", {"attention_weights": _weights(lambda d: 1.0)},
                hint=BY_HAND),
        Mistake("softmax over the queries", "the softmax runs over dim=-2 (the queries), so columns sum to 1; "
                "each query's weights must sum to 1 over the keys, dim=-1.", "mistakes-more",
                {"attention_weights": _weights(SQRT, dim=-2)},
                hint="a test that each query's weights (a row, dim=-1) sum to 1, with T != S"),
        Mistake("mask inverted", "the mask is read as True = hidden; in this project True means may attend "
                "(the convention of F.scaled_dot_product_attention).", "masks",
                {"attention_weights": _weights(SQRT, invert=True)},
                hint="a test that a key the mask hides (False) gets weight exactly 0"),
        Mistake("masked with -inf", "masked scores are set to -inf, so a query that may see no key gets NaN "
                "weights; fill with the dtype's lowest finite value and zero such rows.", "empty-row",
                {"attention_weights": _weights(SQRT, float("-inf"))},
                hint="a test that a query whose mask hides every key gets finite weights, no NaN"),
        Mistake("empty row uniform", "a query that may see no key gets the uniform weights 1/S instead of "
                "zeros; multiply the weights by the mask after the softmax as well.", "empty-row",
                {"attention_weights": _weights(SQRT, after=False)},
                hint="a test that a query whose mask hides every key gets all-zero weights"),
        Mistake("bias scaled with the scores", "the bias is added before the division, (Q K^T + bias) / "
                "sqrt(d_k); it is added to the scaled scores, softmax(Q K^T / sqrt(d_k) + bias), as "
                "F.scaled_dot_product_attention adds a float attn_mask.", "attention-code",
                {"attention_weights": _weights(SQRT, bias_scaled=True)},
                hint="a test with a bias against F.scaled_dot_product_attention given the bias as a float "
                     "attn_mask and the identity as the values"),
        Mistake("-1e9 fill in float16", "masked scores are filled with -1e9, which float16 cannot hold (its "
                "lowest value is -65504): masked_fill raises; fill with torch.finfo(scores.dtype).min or take "
                "the softmax in float32.", "gallery-fp16-mask",
                {"attention_weights": _weights(SQRT, -1e9, upcast=False)},
                hint="a test with float16 query and key and a mask: the weights are finite and sum to 1"),
    ), properties=(
        Property("each query's weights sum to 1 over the keys it may see, 0 on the others", _weights_sum_to_one),
        Property("a query that may see no key gets zero weights", _empty_row_is_zero),
    )),
    Part("scaled_dot_product_attention", run_sdpa, tl.scaled_dot_product_attention, mistakes=(
        Mistake("on_weights not called", "on_weights is never called; the package hands it the weights "
                "(..., T, S) before dropout (this is how record_attention sees them).", "attention-code",
                {"scaled_dot_product_attention": _sdpa(call=False)},
                hint="a test that on_weights is called once, with the (..., T, S) weights"),
        Mistake("empty row averages the values", "a query that may see no key gets the mean of the values "
                "instead of a zero output: its weights must be zero, not 1/S.", "empty-row",
                {"scaled_dot_product_attention": _sdpa(_weights(SQRT, after=False))},
                hint="a test that a query whose mask hides every key gets a zero output"),
        Mistake("on_weights after dropout", "on_weights receives the weights after dropout, which no longer "
                "sum to 1; hand it the weights before dropout (record_attention plots them).", "attention-code",
                {"scaled_dot_product_attention": _sdpa(before_dropout=False)},
                hint="a test that with dropout_p > 0 the weights handed to on_weights still sum to 1"),
        Mistake("dropout_p ignored", "the weights are never dropped, whatever dropout_p; apply "
                "F.dropout(weights, dropout_p) after on_weights and before the product with the values.",
                "attention-code", {"scaled_dot_product_attention": _sdpa(dropout="none")},
                hint="a test that with dropout_p=0.5 and the identity as the values some output entries are 0"),
        Mistake("dropout not rescaled", "the kept weights are not divided by 1 - dropout_p, so the output is "
                "smaller in training than in evaluation; F.dropout rescales them.", "attention-code",
                {"scaled_dot_product_attention": _sdpa(dropout="not rescaled")},
                hint="a test that with the identity as the values each output entry is 0 or weight / (1 - p)"),
    )),
))

# --------------------------------------------------------------------------- 5 embedding


def run_embedding(ns, rec):
    g = generator()
    for vocab, d_model, batch in ((V, D, B), (13, 6, B), (V, D, 1)):
        reference = seeded(vocab, lambda: tl.TokenEmbedding(vocab, d_model, padding_idx=PAD))
        mine = rec.call(f"TokenEmbedding({vocab}, {d_model}, padding_idx={PAD})",
                        lambda: ns.TokenEmbedding(vocab, d_model, padding_idx=PAD))
        rec.call("loading the package's weights", lambda: load_weights(mine, reference))
        tokens = padded_tokens(g, vocab=vocab)[:batch]
        rec.watch(tokens=tokens)
        one = "batch size 1: " if batch == 1 else ""
        out = rec(f"{one}forward(tokens {tuple(tokens.shape)}), d_model={d_model}", lambda: mine(tokens))
        rec.call("backward() from the sum of the output", lambda: out.sum().backward())
        if batch > 1:
            rec("the gradient of the padding token's row", lambda: mine.embedding.weight.grad[PAD])


class _NoScale(tl.TokenEmbedding):
    def forward(self, tokens, name="tokens"):
        return self.embedding(tokens)


class _DividedByScale(tl.TokenEmbedding):
    def forward(self, tokens, name="tokens"):
        return self.embedding(tokens) / self.scale


class _ScaledByDModel(tl.TokenEmbedding):
    def forward(self, tokens, name="tokens"):
        return self.embedding(tokens) * self.d_model


class _NoPaddingIdx(tl.TokenEmbedding):
    def __init__(self, vocab_size, d_model, padding_idx=None):
        super().__init__(vocab_size, d_model, padding_idx)
        self.embedding = nn.Embedding(vocab_size, d_model)


EMBEDDING = Exercise(5, "ex05_embedding", "token embedding", "embedding", {"TokenEmbedding": tl.TokenEmbedding}, (
    Part("TokenEmbedding", run_embedding, tl.TokenEmbedding, mistakes=(
        Mistake("missing sqrt(d_model) scale", "the embeddings are not multiplied by sqrt(d_model) "
                "(Section 3.4), so they are sqrt(d_model) times smaller than the positional encodings "
                "added to them.", "embedding", {"TokenEmbedding": _NoScale}),
        Mistake("divided by sqrt(d_model)", "the embeddings are divided by sqrt(d_model); Section 3.4 "
                "multiplies them by it.", "embedding", {"TokenEmbedding": _DividedByScale}),
        Mistake("scaled by d_model", "the embeddings are multiplied by d_model; Section 3.4 multiplies "
                "them by its square root.", "embedding", {"TokenEmbedding": _ScaledByDModel}),
        Mistake("padding_idx not passed", "nn.Embedding was built without padding_idx, so the padding "
                "token's row receives gradients and is trained like a word.", "embedding",
                {"TokenEmbedding": _NoPaddingIdx}),
    )),
))

# --------------------------------------------------------------------------- 6 positional encoding

PE_CALLS = ((T, D, torch.float32), (S, 6, torch.float32), (50, 8, torch.float64))


def run_positions(ns, rec):
    for length, d_model, dtype in PE_CALLS:
        rec(f"sinusoidal_positional_encoding({length}, {d_model}, dtype={dtype})",
            lambda: ns.sinusoidal_positional_encoding(length, d_model, dtype=dtype))


def _pe_swapped(length, d_model, *, dtype=torch.float32, device=None):
    table = tl.sinusoidal_positional_encoding(length, d_model, dtype=torch.float64)
    return table.view(length, d_model // 2, 2).flip(-1).reshape(length, d_model).to(dtype)  # cos, sin


def _pe_halves(length, d_model, *, dtype=torch.float32, device=None):
    table = tl.sinusoidal_positional_encoding(length, d_model, dtype=torch.float64)
    return torch.cat([table[:, 0::2], table[:, 1::2]], dim=1).to(dtype)  # sines, then cosines


def _pe_from_exponents(length, d_model, even_exponent, odd_exponent, dtype, first=0):
    position = torch.arange(first, first + length, dtype=torch.float64)[:, None]  # (L, 1)
    i = torch.arange(d_model // 2, dtype=torch.float64)  # pair index
    table = torch.empty(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position / 10000.0 ** (even_exponent(i) / d_model))
    table[:, 1::2] = torch.cos(position / 10000.0 ** (odd_exponent(i) / d_model))
    return table.to(dtype)


def _pe_pair_index(length, d_model, *, dtype=torch.float32, device=None):
    return _pe_from_exponents(length, d_model, lambda i: i, lambda i: i, dtype)  # i / d, not 2i / d


def _pe_column_index(length, d_model, *, dtype=torch.float32, device=None):
    return _pe_from_exponents(length, d_model, lambda i: 2 * i, lambda i: 2 * i + 1, dtype)


def _pe_from_one(length, d_model, *, dtype=torch.float32, device=None):
    return _pe_from_exponents(length, d_model, lambda i: 2 * i, lambda i: 2 * i, dtype, first=1)


def _pe_relative(ns) -> bool:
    table = ns.sinusoidal_positional_encoding(40, D, dtype=torch.float64)
    return torch.allclose(table[3:], table[:-3] @ relative_position_map(3, D), atol=1e-6)


MAX_LEN = 50


def run_positional_module(ns, rec):
    g = generator(6)
    x = randn(g, B, T, D)
    rec.watch(x=x)
    pe = rec.call(f"PositionalEncoding({D}, max_len={MAX_LEN})", lambda: ns.PositionalEncoding(D, MAX_LEN))
    rec.call("eval()", lambda: pe.eval())
    rec("forward(x (2, 5, 12))", lambda: pe(x))
    rec("forward(x (2, 5, 12), offset=3)", lambda: pe(x, 3))
    rec("batch size 1: forward(x (1, 5, 12), offset=7)", lambda: pe(x[:1], 7))
    steps = [rec.call(f"forward(x[:, {t}:{t + 1}], offset={t}), one position at a time as with the cache",
                      lambda: pe(x[:, t : t + 1], t)) for t in range(T)]
    rec("the five positions added one at a time with their offsets", lambda: torch.cat(steps, dim=1))
    dropped = rec.call(f"PositionalEncoding({D}, max_len={MAX_LEN}, dropout=0.5)",
                       lambda: ns.PositionalEncoding(D, MAX_LEN, 0.5))
    rec.call("train()", lambda: dropped.train())
    torch.manual_seed(6)
    rec("dropout=0.5 in training: forward(x (2, 5, 12), offset=2)", lambda: dropped(x, 2))


class _PEOffsetIgnored(tl.PositionalEncoding):
    def forward(self, x, offset=0):
        return self.dropout(x + self.table[: x.size(1)].to(x.dtype))


class _PEDropoutOnTable(tl.PositionalEncoding):
    def forward(self, x, offset=0):
        return x + self.dropout(self.table[offset : offset + x.size(1)].to(x.dtype))


POSITIONS = Exercise(6, "ex06_positional_encoding", "sinusoidal positional encoding", "positions",
                     {"sinusoidal_positional_encoding": tl.sinusoidal_positional_encoding,
                      "PositionalEncoding": tl.PositionalEncoding}, (
    Part("sinusoidal_positional_encoding", run_positions, tl.sinusoidal_positional_encoding, mistakes=(
        Mistake("sin and cos swapped", "the even columns hold cosines and the odd ones sines; Section 3.5 "
                "puts sin in column 2i and cos in column 2i+1 (row 0 is 0, 1, 0, 1, ...).",
                "mistakes-heads-sincos", {"sinusoidal_positional_encoding": _pe_swapped},
                hint="a test that row 0 (position 0) is 0, 1, 0, 1, ... (sin 0 and cos 0)"),
        Mistake("sines and cosines in halves", "all the sines come first and all the cosines after them "
                "(tensor2tensor's layout); Section 3.5 interleaves them, sin in column 2i, cos in 2i+1.",
                "positions", {"sinusoidal_positional_encoding": _pe_halves},
                hint="a test that each pair of columns (2i, 2i+1) holds the sine and cosine of one angle: "
                     "PE[pos, 2i]^2 + PE[pos, 2i+1]^2 = 1"),
        Mistake("exponent i/d_model", "the wavelength uses 10000^(i/d_model) with i the pair index; "
                "the exponent is 2i/d_model, so the wavelengths reach 10000 * 2pi only at the last pair.",
                "positions", {"sinusoidal_positional_encoding": _pe_pair_index},
                hint="a test of a few entries in later columns against sin(pos / 10000^(2i / d_model)) computed "
                     "by hand"),
        Mistake("odd columns use their own index", "the cosine in column 2i+1 uses 10000^((2i+1)/d_model); "
                "each sin/cos pair shares one frequency, 10000^(2i/d_model).", "positions",
                {"sinusoidal_positional_encoding": _pe_column_index},
                hint="a test that PE[pos, 2i]^2 + PE[pos, 2i+1]^2 = 1 (one angle per pair)"),
        Mistake("positions counted from 1", "the first row is the encoding of position 1; positions count "
                "from 0, so row 0 is sin 0, cos 0 = 0, 1, 0, 1, ...", "positions",
                {"sinusoidal_positional_encoding": _pe_from_one},
                hint="a test that row 0 is 0, 1, 0, 1, ..."),
    ), properties=(
        Property("row 0 is 0, 1, 0, 1, ... (sin 0 and cos 0)",
                 lambda ns: ns.sinusoidal_positional_encoding(1, 8)[0].tolist() == [0.0, 1.0] * 4),
        Property("PE(pos + 3) is a linear function of PE(pos), the same for every pos", _pe_relative),
    )),
    Part("PositionalEncoding.forward", run_positional_module, tl.PositionalEncoding, mistakes=(
        Mistake("offset ignored", "forward adds PE[0 : L] whatever the offset, so while decoding with the "
                "cache every new token is told it is at position 0; add PE[offset : offset + L].",
                "gallery-positions-with-cache",
                {"PositionalEncoding": _PEOffsetIgnored},
                hint="a test that adding positions one at a time, forward(x[:, t:t+1], offset=t), equals "
                     "forward(x) on the whole sequence"),
        Mistake("dropout on the table only", "dropout acts on the positional encodings before they are "
                "added; Section 5.4 applies it to the sums of the embeddings and the positional encodings.",
                "positions", {"PositionalEncoding": _PEDropoutOnTable},
                hint="a test that in training each output entry is 0 or (x + PE) / (1 - p)"),
    )),
))
