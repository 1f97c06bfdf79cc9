"""Timing helpers for the slides (Table 1's cost argument, measured; fused vs explicit).

The deck measures on the machine that builds it. Each measurement interleaves the
variants and reports medians, because single timings on a shared machine are noisy.
Benchmarks with targets live in ``benchmarks/``; these are for figures.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import torch

from ..attention import attention_weights, scaled_dot_product_attention
from ..data import BOS_ID
from ..decoding import greedy_steps
from ..masks import causal_mask


def median_times(functions: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median wall-clock seconds of each function, run interleaved ``repeats`` times."""
    for _ in range(warmup):
        for fn in functions.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, fn in functions.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


@torch.no_grad()
def attention_cost(lengths, d_model: int = 64, batch: int = 1, repeats: int = 5) -> dict[str, list[float]]:
    """Milliseconds for one self-attention layer's core (Q K^T, softmax, times V) against
    a same-width linear layer (the per-position work of a recurrent or feed-forward
    step), for each sequence length n (Table 1: O(n^2 d) versus O(n d^2))."""
    out: dict[str, list[float]] = {"attention": [], "linear": []}
    for n in lengths:
        x = torch.randn(batch, n, d_model)
        w = torch.randn(d_model, d_model)
        t = median_times(
            {
                "attention": lambda: attention_weights(x, x) @ x,
                "linear": lambda: x @ w,
            },
            repeats=repeats,
        )
        out["attention"].append(t["attention"] * 1e3)
        out["linear"].append(t["linear"] * 1e3)
    return out


def attention_paths(lengths, heads: int = 8, d_k: int = 64, batch: int = 2, repeats: int = 5) -> dict[str, list[float]]:
    """Milliseconds of causal attention forward + backward per sequence length: the
    explicit path (which forms the weights, as recording them does), our fused path,
    and a plain PyTorch ``F.scaled_dot_product_attention`` call."""
    out: dict[str, list[float]] = {"explicit": [], "fused": [], "PyTorch SDPA": []}
    for n in lengths:
        q, k, v = (torch.randn(batch, heads, n, d_k, requires_grad=True) for _ in range(3))
        mask = causal_mask(n)

        def run(fn):
            def go():
                fn().sum().backward()
            return go

        t = median_times(
            {
                "explicit": run(lambda: attention_weights(q, k, mask) @ v),
                "fused": run(lambda: scaled_dot_product_attention(q, k, v, mask)),
                "PyTorch SDPA": run(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)),
            },
            repeats=repeats,
        )
        for name in out:
            out[name].append(t[name] * 1e3)
    return out


def decode_step_times(model, src: torch.Tensor, new_tokens: int, use_cache: bool = True,
                      bos_id: int = BOS_ID) -> list[float]:
    """Milliseconds of each of ``new_tokens`` greedy decoding steps for ``src`` (1, S),
    with the key/value cache or recomputing the whole prefix at every step. EOS is not
    checked, so every run decodes exactly ``new_tokens`` tokens. The steps are
    :func:`transformer_lab.decoding.greedy_steps`', the same as greedy decoding's."""
    if src.dim() != 2 or src.size(0) != 1:
        raise ValueError(f"src must have shape (1, S), got {tuple(src.shape)}")
    if new_tokens < 1 or new_tokens >= model.config.max_len:
        raise ValueError(f"new_tokens must be in [1, max_len={model.config.max_len}), got {new_tokens!r}")
    steps = greedy_steps(model, src, bos_id, eos_id=None, use_cache=use_cache)
    next(steps)  # encodes the source; yields the <bos> column
    times = []
    for _ in range(new_tokens):
        start = time.perf_counter()
        next(steps)  # one decoder step: (1, L) -> (1, L + 1)
        times.append((time.perf_counter() - start) * 1e3)
    return times
