"""Table 1's cost argument, counted and measured: self-attention against a recurrent layer.

Table 1 of Vaswani et al. (2017) gives a self-attention layer O(n^2 d) work and O(1)
sequential operations, a recurrent layer O(n d^2) work and O(n) sequential operations;
Section 4 concludes that self-attention is cheaper "when the sequence length n is smaller
than the representation dimensionality d". :func:`table1_flops` counts the two leading
terms (they cross at n = d); :func:`layer_macs` counts what the layers we time actually do
(the GRU's three gates make it 6 n d^2, the attention layer's projections add 4 n d^2),
:func:`macs_crossover` says where two such counts meet and :func:`mac_rates` turns
timings into multiply-adds per second; :func:`attention_vs_recurrence` times the layers on
this machine; :func:`loglog_slope` reads the exponent off a log-log curve; and
:func:`cached_step_macs` splits one cached decoding step into the work that grows with the
prefix and the work that does not (the key/value cache slide).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import torch
from torch import nn

from .. import checks
from ..multi_head_attention import MultiHeadAttention
from .speed import median_times


def table1_flops(lengths: Sequence[int], d_model: int = 512) -> dict[str, list[int]]:
    """Table 1's leading terms, in multiply-adds per layer, for each length n:
    self-attention n^2 d (Q K^T, then the weights times V: each n^2 d), recurrent n d^2."""
    checks.positive_int("d_model", d_model)
    lengths = [checks.positive_int("lengths[i]", n) for n in lengths]
    return {"self-attention  n² d": [n * n * d_model for n in lengths],
            "recurrent  n d²": [n * d_model * d_model for n in lengths]}


#: The multiply-adds of each layer :func:`attention_vs_recurrence` times, as coefficients
#: (a, b) of a n d^2 + b n^2 d: the attention layer's four projections w_q, w_k, w_v, w_o
#: (4 n d^2) and its core; the core alone, Q K^T and the weights times V (n^2 d each);
#: ``nn.GRU``'s three gates (reset, update, new), each an input-to-hidden W x_t and a
#: hidden-to-hidden U h_{t-1} product of d^2 per step (6 n d^2). Biases, the softmax and
#: the gates' elementwise products (about 3 d multiplies a step) are left out.
LAYER_MAC_TERMS: dict[str, tuple[int, int]] = {"attention layer": (4, 2), "attention core": (0, 2), "GRU": (6, 0)}
#: The same counts as formulas, for labels.
LAYER_MAC_FORMULAS = {"attention layer": "4 n d² + 2 n² d", "attention core": "2 n² d", "GRU": "6 n d²"}


def layer_macs(lengths: Sequence[int], d_model: int = 512) -> dict[str, list[int]]:
    """Multiply-adds of one forward pass, batch 1, of each layer that
    :func:`attention_vs_recurrence` times (same names; :data:`LAYER_MAC_TERMS`), for each
    length n. Unlike Table 1's bare terms they keep the constants: the attention layer
    does 4 n d^2 + 2 n^2 d and the GRU 6 n d^2, so they meet at n = d, and at n < d the
    GRU also does more arithmetic."""
    checks.positive_int("d_model", d_model)
    lengths = [checks.positive_int("lengths[i]", n) for n in lengths]
    return {name: [a * n * d_model * d_model + b * n * n * d_model for n in lengths]
            for name, (a, b) in LAYER_MAC_TERMS.items()}


def macs_crossover(first: str, second: str, d_model: int = 512) -> float:
    """The length n > 0 at which layers ``first`` and ``second`` of :data:`LAYER_MAC_TERMS`
    do the same multiply-adds: a n d^2 + b n^2 d = a' n d^2 + b' n^2 d at
    n = d (a' - a) / (b - b'). The attention layer meets the GRU at n = d, the attention
    core at n = 3 d; ``inf`` if they never meet at a positive length."""
    checks.positive_int("d_model", d_model)
    for name, value in (("first", first), ("second", second)):
        if value not in LAYER_MAC_TERMS:
            raise ValueError(f"{name} must be one of {sorted(LAYER_MAC_TERMS)}, got {value!r}")
    (a1, b1), (a2, b2) = LAYER_MAC_TERMS[first], LAYER_MAC_TERMS[second]
    if (a1, b1) == (a2, b2):
        raise ValueError(f"first and second have the same count everywhere, got {first!r} and {second!r}")
    if b1 == b2:
        return math.inf
    n = d_model * (a2 - a1) / (b1 - b2)
    return n if n > 0 else math.inf


def mac_rates(lengths: Sequence[int], times_ms: dict[str, Sequence[float]],
              d_model: int = 512) -> dict[str, list[float]]:
    """Billions of multiply-adds per second (:func:`layer_macs` over the measured time)
    of each timed layer in ``times_ms`` (names of :data:`LAYER_MAC_TERMS`, milliseconds
    per length): how well each uses the machine. The inverse, time per multiply-add,
    compares layers that do different amounts of work."""
    macs = layer_macs(lengths, d_model)
    rates = {}
    for name, times in times_ms.items():
        if name not in macs:
            raise ValueError(f"times_ms keys must be among {sorted(macs)}, got {name!r}")
        if len(times) != len(lengths) or min(times) <= 0:
            raise ValueError(f"times_ms[{name!r}] must have one positive time per length ({len(lengths)}), "
                             f"got {list(times)}")
        rates[name] = [m / (t * 1e-3) / 1e9 for m, t in zip(macs[name], times)]
    return rates


def loglog_slope(lengths: Sequence[float], values: Sequence[float]) -> float:
    """The least-squares slope of log(values) against log(lengths): 2 for a curve that
    grows as n^2, 1 for one that grows as n."""
    if len(lengths) != len(values) or len(lengths) < 2:
        raise ValueError(f"lengths and values must have the same length >= 2, got {len(lengths)} and {len(values)}")
    if min(lengths) <= 0 or min(values) <= 0:
        raise ValueError("lengths and values must be positive to take logarithms")
    x = [math.log(n) for n in lengths]
    y = [math.log(v) for v in values]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    if sxx == 0:
        raise ValueError("lengths must not all be equal")
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / sxx


def power_law_crossover(lengths: Sequence[float], a: Sequence[float], b: Sequence[float]) -> float:
    """The length at which power laws fitted to ``a`` and ``b`` (over ``lengths``) meet:
    measured points where they cross, or an extrapolation beyond them. ``inf`` if the
    fitted lines are parallel."""
    slope_a, slope_b = loglog_slope(lengths, a), loglog_slope(lengths, b)
    if math.isclose(slope_a, slope_b):
        return math.inf
    mean_log_n = sum(math.log(n) for n in lengths) / len(lengths)
    level_a = sum(math.log(v) for v in a) / len(a) - slope_a * mean_log_n  # log a = level + slope log n
    level_b = sum(math.log(v) for v in b) / len(b) - slope_b * mean_log_n
    return math.exp((level_b - level_a) / (slope_a - slope_b))


def attention_vs_recurrence(lengths: Sequence[int], d_model: int = 512, num_heads: int = 8,
                            repeats: int = 5, threads: int = 1, seed: int = 0) -> dict[str, list[float]]:
    """Median milliseconds, batch 1 and no gradients, for each length n, of:

    - ``attention layer``: :class:`MultiHeadAttention` (projections w_q, w_k, w_v, w_o and
      the attention core), the layer Table 1 counts;
    - ``attention core``: softmax(Q K^T / sqrt(d_k)) V alone on projected (1, H, n, K);
    - ``GRU``: one ``nn.GRU`` layer of width d_model over the n positions (n sequential
      steps). On the CPU, PyTorch projects the inputs of all n positions in one matrix
      product (3 n d^2 multiply-adds) and then runs n steps, each a (3d, d) matrix times
      the state vector (3 d^2) and the gates' elementwise arithmetic.

    Each length gets new random inputs; the three run interleaved, once to warm up and
    then ``repeats`` times (:func:`~transformer_lab.teaching.speed.median_times`), in
    evaluation mode, on the CPU, in float32. :func:`layer_macs` counts their work (same
    names). Runs on ``threads`` threads (restored afterwards): one thread gives steadier
    figures on a shared machine and keeps the comparison about work, not about parallel
    cores."""
    checks.positive_int("threads", threads)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    # Our own random stream: a deck gets the same later results whether this ran or was cached.
    with torch.random.fork_rng(devices=[]):
        try:
            return _time_layers(lengths, d_model, num_heads, repeats, seed)
        finally:
            torch.set_num_threads(before)


@torch.no_grad()
def _time_layers(lengths, d_model: int, num_heads: int, repeats: int, seed: int) -> dict[str, list[float]]:
    """The measurement of :func:`attention_vs_recurrence`, on the caller's threads."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d_model=d_model, num_heads=num_heads).eval()
    gru = nn.GRU(d_model, d_model, batch_first=True).eval()
    d_k = d_model // num_heads
    out: dict[str, list[float]] = {"attention layer": [], "attention core": [], "GRU": []}
    for n in lengths:
        x = torch.randn(1, checks.positive_int("lengths[i]", n), d_model)  # (B, n, D)
        q, k, v = (torch.randn(1, num_heads, n, d_k) for _ in range(3))  # (B, H, n, K)
        t = median_times({"attention layer": lambda: mha(x, x, x),
                          "attention core": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                          "GRU": lambda: gru(x)}, repeats=repeats)
        for name in out:
            out[name].append(t[name] * 1e3)
    return out


def cached_step_macs(d_model: int, d_ff: int, num_layers: int, vocab_size: int, position: int,
                     src_len: int) -> dict[str, int]:
    """Multiply-adds of one cached greedy decoding step at output ``position`` t, batch 1:

    - ``weights``: every decoder layer's projections (self-attention q, k, v, o: 4 d^2;
      cross-attention q and o: 2 d^2) and feed-forward (2 d d_ff), plus the output
      projection (d V). It does not depend on t.
    - ``memory``: the cross-attention keys and values of the memory, projected once, by the
      first step (t = 1): 2 S d^2 per layer; 0 at every later step, which reads them from
      the cache.
    - ``attention``: per layer, Q K^T and weights times V over the t cached positions
      (2 t d) and over the S source positions (2 S d). It grows as O(t d) (Table 1's
      n^2 d, one query row at a time)."""
    for name, value in (("d_model", d_model), ("d_ff", d_ff), ("num_layers", num_layers),
                        ("vocab_size", vocab_size), ("position", position), ("src_len", src_len)):
        checks.positive_int(name, value)
    weights = num_layers * (6 * d_model * d_model + 2 * d_model * d_ff) + d_model * vocab_size
    memory = num_layers * 2 * src_len * d_model * d_model if position == 1 else 0
    attention = num_layers * 2 * d_model * (position + src_len)
    return {"weights": weights, "memory": memory, "attention": attention}


def multi_head_macs(length: int, d_model: int, num_heads: int) -> dict[str, int]:
    """Multiply-adds of one multi-head self-attention layer over ``length`` positions
    (Section 3.2.2, d_k = d_v = d_model / h): the projections w_q, w_k, w_v, w_o
    (4 n d_model h d_k) and the h attention cores (Q K^T and weights times V: 2 n^2 h d_k).
    With h d_k = d_model neither depends on h: "the total computational cost is similar
    to that of single-head attention with full dimensionality"."""
    checks.positive_int("length", length)
    checks.positive_int("d_model", d_model)
    checks.positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
    d_k = d_model // num_heads
    return {"projections": 4 * length * d_model * num_heads * d_k,
            "attention": 2 * length * length * num_heads * d_k}


class MatrixProduct(NamedTuple):
    """One matrix product of a layer: ``name``, its operands' shapes (rows, inner, columns),
    how many such products run side by side (``count``: the heads, the three gates fused
    into one) and its multiply-adds (``macs``: count x rows x inner x columns)."""

    name: str
    rows: int
    inner: int
    columns: int
    count: int = 1

    @property
    def macs(self) -> int:
        return self.count * self.rows * self.inner * self.columns


def sequential_products(length: int, d_model: int = 512, num_heads: int = 8) -> dict[str, list[MatrixProduct]]:
    """The matrix products of one layer over one sentence of ``length`` n positions (batch
    1, forward pass), in the order they must run: each needs the one before it.

    - ``GRU`` (the recurrent layer :func:`attention_vs_recurrence` times, three gates
      fused as PyTorch stores them): the input projection of all n positions at once, an
      (n, d) x (d, 3d) product, then n hidden-state products (1, d) x (d, 3d), step t
      waiting for the state of step t - 1: 1 + n products in a row (Table 1's O(n)
      sequential operations). Total 6 n d^2, as :data:`LAYER_MAC_TERMS`.
    - ``self-attention`` (Section 3.2.2): the projections Q, K, V of all n positions
      ((n, d) x (d, 3d)), the h score matrices Q K^T ((n, d_k) x (d_k, n) each), the h
      weighted sums of V ((n, n) x (n, d_v) each), the output projection W^O ((n, d) x
      (d, d)): 4 products in a row whatever n is (O(1)); the softmax between the second
      and the third is elementwise. Total 4 n d^2 + 2 n^2 d.

    A batch of sentences widens every product (more rows) and changes neither chain."""
    checks.positive_int("length", length)
    checks.positive_int("d_model", d_model)
    checks.positive_int("num_heads", num_heads)
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
    n, d, d_k = length, d_model, d_model // num_heads
    gru = [MatrixProduct("input projection", n, d, 3 * d)]
    gru += [MatrixProduct("state product", 1, d, 3 * d) for _ in range(n)]  # h_t from h_(t-1)
    attention = [MatrixProduct("Q, K, V projections", n, d, 3 * d),
                 MatrixProduct("Q Kᵀ", n, d_k, n, num_heads),
                 MatrixProduct("weights × V", n, n, d_k, num_heads),
                 MatrixProduct("output projection", n, d, d)]
    return {"GRU": gru, "self-attention": attention}


def chain_summary(chain: Sequence[MatrixProduct]) -> str:
    """A chain of products in words, runs of one name counted: "input projection → 50 ×
    state product"."""
    runs: list[list] = []
    for product in chain:
        if runs and runs[-1][0] == product.name:
            runs[-1][1] += 1
        else:
            runs.append([product.name, 1])
    return " → ".join(name if count == 1 else f"{count} × {name}" for name, count in runs)
