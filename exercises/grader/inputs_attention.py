"""Exercises 1, 5 and 6: equation (1), the token embedding and the positional encoding.
Each mistake is the package's code with one thing done wrong."""

from __future__ import annotations

import math

import torch
from torch import nn

import transformer_lab as tl
from transformer_lab.positional_encoding import relative_position_map

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


def run_attention_weights(ns, rec):
    q, k, _, masks, bias = attention_inputs()
    for name, mask in masks.items():
        rec(f"attention_weights(q (2, 3, 5, 4), k (2, 3, 7, 4), {name})", lambda: ns.attention_weights(q, k, mask))
    rec("attention_weights with a bias (2, 3, 5, 7) added to the scores",
        lambda: ns.attention_weights(q, k, masks["a (5, 7) mask"], bias=bias))


def _weights(scale_of, fill, *, dim=-1, invert=False, after=True, before=True):
    """attention_weights with the scale, fill value, softmax axis and mask handling chosen."""
    def attention_weights(query, key, mask=None, *, bias=None):
        scores = query @ key.transpose(-2, -1) / scale_of(query.size(-1))  # (..., T, S)
        scores = scores if bias is None else scores + bias
        if mask is not None and invert:
            mask = ~mask
        if mask is not None and before:
            scores = scores.masked_fill(~mask, fill)
        weights = torch.softmax(scores, dim=dim)
        return weights * mask if mask is not None and after else weights
    return attention_weights


SQRT, MIN = math.sqrt, torch.finfo(torch.float32).min


def _weights_sum_to_one(ns) -> bool:
    q, k, _, masks, _ = attention_inputs()
    mask = masks["a padding mask (2, 1, 1, 7)"]
    w = ns.attention_weights(q, k, mask)
    return torch.allclose(w.sum(-1), torch.ones(B, H, T), atol=1e-5) and bool((w * ~mask == 0).all())


def _empty_row_is_zero(ns) -> bool:
    q, k, _, masks, _ = attention_inputs()
    w = ns.attention_weights(q, k, masks["a (2, 3, 5, 7) mask with an empty row"])
    return bool((w[0, 1, 2] == 0).all())


def run_sdpa(ns, rec):
    q, k, v, masks, _ = attention_inputs()
    for name, mask in masks.items():
        rec(f"scaled_dot_product_attention(q, k, v (2, 3, 7, 6), {name})",
            lambda: ns.scaled_dot_product_attention(q, k, v, mask))
    seen = []
    mask = masks["a padding mask (2, 1, 1, 7)"]
    rec.call("scaled_dot_product_attention(..., on_weights=...)",
             lambda: ns.scaled_dot_product_attention(q, k, v, mask, on_weights=seen.append))
    rec("the weights handed to on_weights", lambda: seen[0] if len(seen) == 1 else f"{len(seen)} calls")


def _sdpa_without_on_weights(query, key, value, mask=None, dropout_p=0.0, *, bias=None, on_weights=None):
    return tl.scaled_dot_product_attention(query, key, value, mask, dropout_p, bias=bias)


def _sdpa_uniform_empty_rows(query, key, value, mask=None, dropout_p=0.0, *, bias=None, on_weights=None):
    weights = _weights(SQRT, MIN, after=False)(query, key, mask, bias=bias)
    if on_weights is not None:
        on_weights(weights)
    return weights @ value


MASK_AFTER = Mistake(
    "mask after the softmax", "the mask is applied after the softmax, so each query's weights sum to less "
    "than 1 over the keys it may see; set the masked scores to the lowest value before the softmax.",
    "mistakes-scale-mask", {"attention_weights": _weights(SQRT, MIN, before=False)})
ATTENTION = Exercise(1, "ex01_attention", "attention weights and scaled dot-product attention", "attention", {
    "attention_weights": tl.attention_weights, "scaled_dot_product_attention": tl.scaled_dot_product_attention}, (
    Part("attention_weights", run_attention_weights, tl.attention_weights, mistakes=(
        MASK_AFTER,
        Mistake("divided by d_k", "the scores are divided by d_k instead of sqrt(d_k), so the weights are "
                "too flat; dot products of unit-variance vectors have variance d_k, hence its square root.",
                "mistakes-scale-mask", {"attention_weights": _weights(lambda d: d, MIN)}),
        Mistake("not scaled", "the scores Q K^T are not divided by sqrt(d_k), so for large d_k the softmax "
                "saturates and its gradients vanish.", "why-sqrt", {"attention_weights": _weights(lambda d: 1.0, MIN)}),
        Mistake("softmax over the queries", "the softmax runs over dim=-2 (the queries), so columns sum to 1; "
                "each query's weights must sum to 1 over the keys, dim=-1.", "mistakes-more",
                {"attention_weights": _weights(SQRT, MIN, dim=-2)}),
        Mistake("mask inverted", "the mask is read as True = hidden; in this project True means may attend "
                "(the convention of F.scaled_dot_product_attention).", "masks",
                {"attention_weights": _weights(SQRT, MIN, invert=True)}),
        Mistake("masked with -inf", "masked scores are set to -inf, so a query that may see no key gets NaN "
                "weights; fill with the dtype's lowest finite value and zero such rows.", "empty-row",
                {"attention_weights": _weights(SQRT, float("-inf"))}),
        Mistake("empty row uniform", "a query that may see no key gets the uniform weights 1/S instead of "
                "zeros; multiply the weights by the mask after the softmax as well.", "empty-row",
                {"attention_weights": _weights(SQRT, MIN, after=False)}),
    ), properties=(
        Property("each query's weights sum to 1 over the keys it may see, 0 on the others", _weights_sum_to_one),
        Property("a query that may see no key gets zero weights", _empty_row_is_zero),
    )),
    Part("scaled_dot_product_attention", run_sdpa, tl.scaled_dot_product_attention, mistakes=(
        Mistake("on_weights not called", "on_weights is never called; the package hands it the weights "
                "(..., T, S) before dropout (this is how record_attention sees them).", "attention-code",
                {"scaled_dot_product_attention": _sdpa_without_on_weights}),
        Mistake("empty row averages the values", "a query that may see no key gets the mean of the values "
                "instead of a zero output: its weights must be zero, not 1/S.", "empty-row",
                {"scaled_dot_product_attention": _sdpa_uniform_empty_rows}),
    )),
))

# --------------------------------------------------------------------------- 5 embedding


def run_embedding(ns, rec):
    g = generator()
    for vocab, d_model in ((V, D), (13, 6)):
        reference = seeded(vocab, lambda: tl.TokenEmbedding(vocab, d_model, padding_idx=PAD))
        mine = rec.call(f"TokenEmbedding({vocab}, {d_model}, padding_idx={PAD})",
                        lambda: ns.TokenEmbedding(vocab, d_model, padding_idx=PAD))
        rec.call("loading the package's weights", lambda: load_weights(mine, reference))
        tokens = padded_tokens(g, vocab=vocab)
        out = rec(f"forward(tokens {tuple(tokens.shape)}), d_model={d_model}", lambda: mine(tokens))
        rec.call("backward() from the sum of the output", lambda: out.sum().backward())
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


def _pe_from_exponents(length, d_model, even_exponent, odd_exponent, dtype):
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    i = torch.arange(d_model // 2, dtype=torch.float64)  # pair index
    table = torch.empty(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position / 10000.0 ** (even_exponent(i) / d_model))
    table[:, 1::2] = torch.cos(position / 10000.0 ** (odd_exponent(i) / d_model))
    return table.to(dtype)


def _pe_pair_index(length, d_model, *, dtype=torch.float32, device=None):
    return _pe_from_exponents(length, d_model, lambda i: i, lambda i: i, dtype)  # i / d, not 2i / d


def _pe_column_index(length, d_model, *, dtype=torch.float32, device=None):
    return _pe_from_exponents(length, d_model, lambda i: 2 * i, lambda i: 2 * i + 1, dtype)


def _pe_relative(ns) -> bool:
    table = ns.sinusoidal_positional_encoding(40, D, dtype=torch.float64)
    return torch.allclose(table[3:], table[:-3] @ relative_position_map(3, D), atol=1e-6)


POSITIONS = Exercise(6, "ex06_positional_encoding", "sinusoidal positional encoding", "positions",
                     {"sinusoidal_positional_encoding": tl.sinusoidal_positional_encoding}, (
    Part("sinusoidal_positional_encoding", run_positions, tl.sinusoidal_positional_encoding, mistakes=(
        Mistake("sin and cos swapped", "the even columns hold cosines and the odd ones sines; Section 3.5 "
                "puts sin in column 2i and cos in column 2i+1 (row 0 is 0, 1, 0, 1, ...).",
                "mistakes-heads-sincos", {"sinusoidal_positional_encoding": _pe_swapped}),
        Mistake("sines and cosines in halves", "all the sines come first and all the cosines after them "
                "(tensor2tensor's layout); Section 3.5 interleaves them, sin in column 2i, cos in 2i+1.",
                "positions", {"sinusoidal_positional_encoding": _pe_halves}),
        Mistake("exponent i/d_model", "the wavelength uses 10000^(i/d_model) with i the pair index; "
                "the exponent is 2i/d_model, so the wavelengths reach 10000 * 2pi only at the last pair.",
                "positions", {"sinusoidal_positional_encoding": _pe_pair_index}),
        Mistake("odd columns use their own index", "the cosine in column 2i+1 uses 10000^((2i+1)/d_model); "
                "each sin/cos pair shares one frequency, 10000^(2i/d_model).", "positions",
                {"sinusoidal_positional_encoding": _pe_column_index}),
    ), properties=(
        Property("row 0 is 0, 1, 0, 1, ... (sin 0 and cos 0)",
                 lambda ns: ns.sinusoidal_positional_encoding(1, 8)[0].tolist() == [0.0, 1.0] * 4),
        Property("PE(pos + 3) is a linear function of PE(pos), the same for every pos", _pe_relative),
    )),
))
