"""Exercise 16: grouped-query attention (Ainslie et al., 2023), multi-query attention
(Shazeer, 2019) as its one-group case, with the decoding cache of num_kv_heads heads.
Each mistake is the package's code with one thing done wrong."""

from __future__ import annotations

import torch
from torch import nn

import transformer_lab as tl
from transformer_lab.multi_head_attention import as_attention_mask

from .core import Exercise, Mistake, Part, Property
from .inputs import B, D, PAD, S, T, generator, padded_tokens, randn, randomise
from .multi_head import P_DROP, mean_of_draws, pair, same_output
from .stages import GROUPED_QUERY_STAGES

# (label, num_heads, num_kv_heads, options): two query heads per key/value head, three
# key/value heads (so that a wrong group mapping shows), multi-query, multi-head, other d_k, d_v
BUILDS = {
    "grouped": (f"GroupedQueryAttention({D}, 4, 2)", 4, 2, {}),
    "three groups": (f"GroupedQueryAttention({D}, 6, 3)", 6, 3, {}),
    "multi-query": (f"GroupedQueryAttention({D}, 4, 1)", 4, 1, {}),
    "multi-head": (f"GroupedQueryAttention({D}, 3, 3)", 3, 3, {}),
    "d_k=5": (f"GroupedQueryAttention({D}, 4, 2, d_k=5, d_v=2, bias=False)", 4, 2, dict(d_k=5, d_v=2, bias=False)),
    "dropout": (f"GroupedQueryAttention({D}, 4, 2, dropout={P_DROP})", 4, 2, dict(dropout=P_DROP)),
}
PROMPT = 3  # decoding: the first three positions at once, then one at a time


def _pair(ns, rec, g, seed, build):
    label, heads, kv_heads, options = BUILDS[build]
    return pair(ns, rec, g, seed, label, lambda n, **o: n.GroupedQueryAttention(D, heads, kv_heads, **o), **options)


def run_gqa(ns, rec):
    g = generator()
    x, query, memory = randn(g, B, S, D), randn(g, B, T, D), randn(g, B, S, D)
    padding = (padded_tokens(g) != PAD)[:, None, None, :]  # (B, 1, 1, S)
    window, causal = torch.ones(T, S, dtype=torch.bool).tril(2), tl.causal_mask(S)  # (T, S), (S, S)
    rec.watch(query=query, key=memory, x=x, mask=padding, window=window, causal=causal)
    cross = "query (2, 5, 12), key = value (2, 7, 12)"
    mine, _ = _pair(ns, rec, g, 1, "grouped")
    rec("4 query heads, 2 key/value heads: self-attention, x (2, 7, 12), no mask", lambda: mine(x, x, x), module=mine)
    rec(f"4 query heads, 2 key/value heads: {cross}, padding mask (2, 1, 1, 7)",
        lambda: mine(query, memory, memory, mask=padding), module=mine)
    rec(f"4 query heads, 2 key/value heads: {cross}, mask (5, 7)", lambda: mine(query, memory, memory, mask=window),
        module=mine)
    rec("batch size 1: 4 query heads, 2 key/value heads: query (1, 5, 12), key = value (1, 7, 12), padding mask "
        "(1, 1, 1, 7)", lambda: mine(query[:1], memory[:1], memory[:1], mask=padding[:1]), module=mine)
    cache = tl.KVCache()
    prompt = x[:, :PROMPT]
    rec(f"decoding with a KVCache: positions 0..{PROMPT - 1}, x[:, :{PROMPT}], causal mask ({PROMPT}, {PROMPT})",
        lambda: mine(prompt, prompt, prompt, mask=tl.causal_mask(PROMPT), cache=cache), module=mine)
    for t in range(PROMPT, S):
        step = x[:, t : t + 1]
        rec(f"then position {t} alone, x[:, {t}:{t + 1}], with the cache", lambda: mine(step, step, step, cache=cache),
            module=mine)
    rec(f"the self-attention cache after {S} positions: (cache.k, cache.v), 2 key/value heads each",
        lambda: (cache.k, cache.v))
    static = tl.KVCache(static=True)
    rec("cross-attention with a static KVCache: query[:, :1], memory (2, 7, 12), padding mask",
        lambda: mine(query[:, :1], memory, memory, mask=padding, cache=static), module=mine)
    rec("then query[:, 1:2] with the filled static cache (it reads the memory's keys and values from it)",
        lambda: mine(query[:, 1:2], memory, memory, mask=padding, cache=static), module=mine)
    rec("the static cache: (cache.k, cache.v)", lambda: (static.k, static.v))
    for seed, build, heads in ((2, "three groups", "6 query heads, 3 key/value heads"),
                               (3, "multi-query", "4 query heads, 1 key/value head"),
                               (4, "d_k=5", "d_k=5, d_v=2, no biases")):
        mine, _ = _pair(ns, rec, g, seed, build)
        rec(f"{heads}: {cross}, padding mask (2, 1, 1, 7)", lambda: mine(query, memory, memory, mask=padding),
            module=mine)
    mine, _ = _pair(ns, rec, g, 5, "multi-head")
    rec("3 query heads, 3 key/value heads (multi-head attention): self-attention, x, causal mask (7, 7)",
        lambda: mine(x, x, x, mask=causal), module=mine)
    mine, reference = _pair(ns, rec, g, 7, "dropout")
    expected = reference(query, memory, memory, mask=padding)
    rec(f"dropout={P_DROP} in eval mode: {cross}, padding mask: equals the output without dropout",
        lambda: same_output(mine(query, memory, memory, mask=padding), expected))
    rec.call("train()", lambda: mine.train())
    rec(f"dropout={P_DROP} in training, 2048 draws: their mean is the output in eval mode",
        lambda: mean_of_draws(lambda q, kv: mine(q, kv, kv, mask=padding[:1].expand(len(q), -1, -1, -1)),
                              query[:1], memory[:1], expected[:1]))


class _Repeated(tl.GroupedQueryAttention):
    """The package's module computing attention as most code does: each key/value head
    copied for the query heads of its group (``expand``), then multi-head attention. The
    subclasses change one step."""

    def expand(self, x):
        return x.repeat_interleave(self.group, dim=1)  # (B, G, S, K) -> (B, H, S, K): g, g, ..., g+1, ...

    def key_value(self, key, value, cache):
        if cache is not None and cache.filled:
            return cache.k, cache.v  # (B, G, S, K), (B, G, S, Kv)
        k = self.split_heads(self.w_k(key), self.num_kv_heads, self.d_k)  # (B, G, S, K)
        v = self.split_heads(self.w_v(value), self.num_kv_heads, self.d_v)  # (B, G, S, Kv)
        return (k, v) if cache is None else cache.update(k, v)

    def forward(self, query, key, value, mask=None, cache=None):
        q = self.split_heads(self.w_q(query), self.num_heads, self.d_k)  # (B, H, T, K)
        k, v = self.key_value(key, value, cache)
        k, v = self.expand(k), self.expand(v)  # (B, H, S, K), (B, H, S, Kv)
        dropout_p = self.dropout if self.training else 0.0
        heads = tl.scaled_dot_product_attention(q, k, v, as_attention_mask(mask), dropout_p)  # (B, H, T, Kv)
        batch, _, length, _ = heads.shape
        return self.w_o(heads.transpose(1, 2).reshape(batch, length, self.num_heads * self.d_v))  # (B, T, D)


class _Tiled(_Repeated):
    def expand(self, x):
        return x.repeat(1, self.group, 1, 1)  # g = 0, 1, ..., G-1, 0, 1, ...: head i reads i % G


class _GroupedByKVHeads(_Repeated):
    def expand(self, x):
        index = torch.arange(self.num_heads, device=x.device) // self.num_kv_heads  # i // G, not i // (H/G)
        return x[:, index]


class _CachesTheCopies(_Repeated):
    """The copies made before the cache, which then holds H heads."""

    def key_value(self, key, value, cache):
        if cache is not None and cache.filled:
            return cache.k, cache.v  # already (B, H, S, K)
        k = self.split_heads(self.w_k(key), self.num_kv_heads, self.d_k)
        v = self.split_heads(self.w_v(value), self.num_kv_heads, self.d_v)
        k, v = super().expand(k), super().expand(v)  # (B, H, S, K), (B, H, S, Kv)
        return (k, v) if cache is None else cache.update(k, v)

    def expand(self, x):
        return x  # copied already


class _NumKVHeadsIgnored(_Repeated):
    """Multi-head attention: a key/value head per query head, whatever num_kv_heads."""

    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, *, d_k=None, d_v=None, bias=True, **options):
        super().__init__(d_model, num_heads, num_kv_heads, dropout, d_k=d_k, d_v=d_v, bias=bias, **options)
        self.num_kv_heads, self.group = num_heads, 1
        self.w_k = nn.Linear(d_model, num_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, num_heads * self.d_v, bias=bias)
        self.reset_parameters()


class _KeysToDModel(_Repeated):
    """w_k maps to d_model features, as in the paper's multi-head attention (h * d_k = d_model)."""

    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0, *, d_k=None, d_v=None, bias=True, **options):
        super().__init__(d_model, num_heads, num_kv_heads, dropout, d_k=d_k, d_v=d_v, bias=bias, **options)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.reset_parameters()

    def key_value(self, key, value, cache):
        k = self.w_k(key).view(key.size(0), key.size(1), self.num_kv_heads, -1).transpose(1, 2)  # (B, G, S, D/G)
        v = self.split_heads(self.w_v(value), self.num_kv_heads, self.d_v)  # (B, G, S, Kv)
        return (k, v) if cache is None else cache.update(k, v)


def _equals_multi_head(ns) -> bool:
    """With num_kv_heads == num_heads it is the paper's multi-head attention (same weights)."""
    g = generator()
    mine, paper = ns.GroupedQueryAttention(D, 3, 3).eval(), randomise(tl.MultiHeadAttention(D, 3), g).eval()
    mine.load_state_dict(paper.state_dict())
    query, memory = randn(g, B, T, D), randn(g, B, S, D)
    return torch.allclose(mine(query, memory, memory), paper(query, memory, memory), atol=1e-5)


def _cached_equals_full(ns) -> bool:
    module = ns.GroupedQueryAttention(D, 4, 2).eval()
    x, cache = randn(generator(), B, S, D), tl.KVCache()
    steps = torch.cat([module(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache) for t in range(S)], 1)
    return torch.allclose(steps, module(x, x, x, mask=tl.causal_mask(S)), atol=1e-5) and cache.k.size(1) == 2


def _every_parameter_learns(ns) -> bool:
    module, x = ns.GroupedQueryAttention(D, 4, 2), randn(generator(), B, S, D)
    module(x, x, x).square().sum().backward()
    params = list(module.parameters())
    return len(params) == 8 and all(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in params)


BY_HAND = ("a test against F.scaled_dot_product_attention(q, k, v, enable_gqa=True) (PyTorch's own grouped "
           "heads) on the module's own projections, with num_kv_heads > 1 and < num_heads")
SHAPES = "a test of the projections' shapes: w_k (num_kv_heads * d_k, d_model), w_v (num_kv_heads * d_v, d_model)"
GROUPED_QUERY = Exercise(16, "ex16_grouped_query_attention", "grouped-query attention", "grouped-query",
                         {"GroupedQueryAttention": tl.GroupedQueryAttention}, (
    Part("GroupedQueryAttention", run_gqa, tl.GroupedQueryAttention, mistakes=(
        Mistake("key/value heads tiled", "the key/value heads are copied with repeat (tile: 0, 1, 0, 1, ...), so "
                "query head i reads key/value head i % G; a group is h/G neighbouring query heads, "
                "g = floor(i / (h/G)): repeat_interleave along the heads.", "grouped-query",
                {"GroupedQueryAttention": _Tiled}, hint=BY_HAND),
        Mistake("cache holds the copies", "the key/value heads are copied for their groups before the cache, "
                "which then holds h heads per token instead of G, losing the saving grouped-query attention "
                "exists for; cache the G heads and copy (or stack the queries) after.", "grouped-query-cache",
                {"GroupedQueryAttention": _CachesTheCopies},
                hint="a test that after decoding with a KVCache, cache.k has shape (B, num_kv_heads, S, d_k)"),
        Mistake("num_kv_heads ignored", "w_k and w_v project to num_heads heads, as in the paper's multi-head "
                "attention, whatever num_kv_heads; they project to num_kv_heads * d_k and num_kv_heads * d_v "
                "features.", "grouped-query", {"GroupedQueryAttention": _NumKVHeadsIgnored}, hint=SHAPES),
        Mistake("query heads grouped by num_kv_heads", "query head i reads key/value head i // num_kv_heads; "
                "each group has h/G query heads, so head i reads key/value head i // (num_heads // "
                "num_kv_heads).", "grouped-query", {"GroupedQueryAttention": _GroupedByKVHeads}, hint=BY_HAND),
        Mistake("keys projected to d_model", "w_k maps to d_model features (the paper's h * d_k); the keys of "
                "grouped-query attention have num_kv_heads heads of d_k, num_kv_heads * d_k features, like the "
                "values.", "grouped-query", {"GroupedQueryAttention": _KeysToDModel}, hint=SHAPES),
    ), properties=(
        Property("with num_kv_heads == num_heads it equals multi-head attention holding the same weights",
                 _equals_multi_head),
        Property("decoding one position at a time equals the causal run, with num_kv_heads heads in the cache",
                 _cached_equals_full),
        Property("all 8 parameters (w_q, w_k, w_v, w_o) are registered and receive a gradient",
                 _every_parameter_learns),
    ), stages=GROUPED_QUERY_STAGES),
))
