"""What the paper leaves unspecified, and what this package does there, computed where it
can be (the appendix slide "What the paper leaves unspecified").

- :func:`footnote5_flops`: Table 2's training cost as footnote 5 estimates it, training time
  x number of GPUs x an assumed sustained single-precision rate (:data:`FOOTNOTE5_TFLOPS`),
  with Section 5.2's times (:data:`TRAINING_TIME`).
- :func:`released_positional_encoding` and :func:`compare_with_released_positions`: the
  positional encoding of the authors' released code (tensor2tensor, 2017), which concatenates
  all sines then all cosines and spaces its d/2 frequencies geometrically from 1 to 1/10000
  inclusive, against Section 3.5's formula, which the package follows.
- :func:`initial_spread`: the standard deviation of each kind of weight as the package
  initialises it at the base model's sizes, beside the rule that sets it (the paper states none).
- :func:`longest_output`: how long the package lets an output grow ("input length + 50").
- :func:`batch_per_update`: how many tokens one update reads when ``max_tokens`` is 25,000
  and training runs on several processes (one per GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from ..data import BOS_ID, EOS_ID, TokenBatchSampler
from ..decoding import generate
from ..embeddings import TokenEmbedding
from ..feed_forward import PositionwiseFeedForward
from ..model import Transformer, TransformerConfig
from ..multi_head_attention import MultiHeadAttention
from ..positional_encoding import sinusoidal_positional_encoding

#: Footnote 5 of Section 6.1: "We used values of 2.8, 3.7, 6.0 and 9.5 TFLOPS for K80, K40,
#: M40 and P100, respectively."
FOOTNOTE5_TFLOPS: dict[str, float] = {"K80": 2.8, "K40": 3.7, "M40": 6.0, "P100": 9.5}
#: Section 5.2: 8 P100 GPUs; base models 100,000 steps or 12 hours, big models 300,000 steps (3.5 days).
TRAINING_TIME: dict[str, dict] = {"base": {"hours": 12.0, "gpus": 8, "gpu": "P100"},
                                  "big": {"hours": 3.5 * 24, "gpus": 8, "gpu": "P100"}}


def footnote5_flops(hours: float, gpus: int, gpu: str) -> float:
    """Floating-point operations as Table 2 estimates them: seconds x GPUs x the GPU's rate."""
    if gpu not in FOOTNOTE5_TFLOPS:
        raise ValueError(f"gpu must be one of {sorted(FOOTNOTE5_TFLOPS)}, got {gpu!r}")
    return hours * 3600.0 * gpus * FOOTNOTE5_TFLOPS[gpu] * 1e12


def released_positional_encoding(length: int, d_model: int) -> torch.Tensor:
    """(length, d_model) float64: the released code's layout (tensor2tensor's timing signal,
    2017): columns 0 .. d/2 - 1 hold sin(pos * f_i), columns d/2 .. d - 1 cos(pos * f_i), with
    f_i = 10000^(-i / (d/2 - 1)) for i = 0 .. d/2 - 1, so the last frequency is exactly 1/10000."""
    half = d_model // 2
    if d_model % 2 or half < 2:
        raise ValueError(f"d_model must be an even int of at least 4, got {d_model!r}")
    frequency = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float64) / (half - 1))  # (D/2,)
    angle = torch.arange(length, dtype=torch.float64)[:, None] * frequency  # (L, D/2)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)  # (L, D)


@dataclass(frozen=True)
class ReleasedPositions:
    """Section 3.5's table (the package's) against the released code's at ``d_model``:
    ``same_after_reordering``, whether moving the released table's columns back to the
    interleaved layout gives the package's table (within 1e-9); ``largest_ratio``, the largest
    ratio of one pair's frequencies; the longest wavelength of each, in units of 2*pi;
    ``largest_difference``, the largest entry difference after reordering over ``length``
    positions."""

    d_model: int
    length: int
    same_after_reordering: bool
    largest_ratio: float
    longest_package: float
    longest_released: float
    largest_difference: float


def compare_with_released_positions(d_model: int = 512, length: int = 100) -> ReleasedPositions:
    ours = sinusoidal_positional_encoding(length, d_model, dtype=torch.float64)  # (L, D), interleaved
    theirs = released_positional_encoding(length, d_model)  # (L, D), concatenated
    half = d_model // 2
    reordered = torch.empty_like(theirs)
    reordered[:, 0::2], reordered[:, 1::2] = theirs[:, :half], theirs[:, half:]  # back to sin, cos, sin, ...
    i = torch.arange(half, dtype=torch.float64)
    package_frequency = torch.exp(-math.log(10000.0) * 2 * i / d_model)
    released_frequency = torch.exp(-math.log(10000.0) * i / (half - 1))
    difference = float((ours - reordered).abs().max())
    return ReleasedPositions(d_model, length, difference < 1e-9,
                             float((package_frequency / released_frequency).max()),
                             float(1 / package_frequency[-1]), float(1 / released_frequency[-1]), difference)


@dataclass(frozen=True)
class Spread:
    """One kind of weight: its measured standard deviation and the rule the package uses."""

    weight: str
    std: float
    rule: str
    expected: float


def initial_spread(d_model: int = 512, d_ff: int = 2048, num_heads: int = 8, vocab_size: int = 1000,
                   seed: int = 0) -> list[Spread]:
    """The standard deviation of each kind of weight the package initialises, at the base
    model's sizes, measured on freshly built modules, with the rule (and value) that sets it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        embedding = TokenEmbedding(vocab_size, d_model)
        attention = MultiHeadAttention(d_model, num_heads)
        ffn = PositionwiseFeedForward(d_model, d_ff)
        norm = nn.LayerNorm(d_model)
    return [
        Spread("embedding E", float(embedding.weight.detach().std()), "normal, std 1/√d_model", d_model**-0.5),
        Spread("W^Q, W^K, W^V, W^O", float(attention.w_q.weight.detach().std()), "Xavier uniform, biases 0",
               math.sqrt(2 / (d_model + d_model))),
        Spread("W_1", float(ffn.w_1.weight.detach().std()), "PyTorch's default: U(±1/√fan_in)", 1 / math.sqrt(3 * d_model)),
        Spread("W_2", float(ffn.w_2.weight.detach().std()), "PyTorch's default: U(±1/√fan_in)", 1 / math.sqrt(3 * d_ff)),
        Spread("LayerNorm gain", float(norm.weight.detach().std()), "ones (biases 0)", 0.0),
    ]


def longest_output(source_length: int = 7, extra_length: int = 50, seed: int = 0) -> int:
    """The length of the output :func:`~transformer_lab.generate` returns for a source of
    ``source_length`` tokens when the model never ends (its end-of-sequence logit pushed
    down): the cap, ``<bos>`` included."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        config = TransformerConfig(13, 13, d_model=16, num_heads=2, d_ff=32, num_layers=1, dropout=0.0)
        model = Transformer(config).eval()
        with torch.no_grad():
            model.output_projection.bias[EOS_ID] = -1e4  # it never writes <eos>
        src = torch.randint(3, 13, (1, source_length))
    return generate(model, src, BOS_ID, EOS_ID, beam_size=1, extra_length=extra_length).size(1)


@dataclass(frozen=True)
class BatchPerUpdate:
    """``ranks`` processes (one per GPU) drawing batches of at most ``max_tokens`` padded
    target tokens (the sampler's budget, padding included) from ``sentences`` random lengths:
    the largest batch any rank draws and the padded target tokens of the first update, which
    reads one batch from every rank."""

    max_tokens: int
    ranks: int
    largest_batch: int
    first_update: int


def batch_per_update(max_tokens: int = 25_000, ranks: int = 8, sentences: int = 20_000,
                     seed: int = 0) -> BatchPerUpdate:
    """What one update reads in the package: every rank draws a whole batch of its own.
    Sentence lengths are uniform in 5 .. 60 tokens (an illustration, not WMT's)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(5, 61, (sentences,), generator=g).tolist()
    largest, first_update = 0, 0
    for rank in range(ranks):
        batches = list(TokenBatchSampler(lengths, lengths, max_tokens, seed=seed, num_replicas=ranks, rank=rank))
        padded = [len(b) * max(lengths[i] for i in b) for b in batches]  # (batch size) x (longest)
        largest, first_update = max(largest, *padded), first_update + padded[0]
    return BatchPerUpdate(max_tokens, ranks, largest, first_update)
