"""Greedy search and beam search for the decoder-only model, laid out as the
encoder-decoder's (:mod:`transformer_lab.decoding`, Section 6.1 of Vaswani et al., 2017).

The source is the prompt: ``src <eos>`` runs through the model once, filling the key/value
cache, then ``<bos>`` and one token per step follow it, exactly as the encoder-decoder's
decoder starts from ``<bos>``. The result has the encoder-decoder's layout, (B, <= max_len)
from ``<bos>``, so the same evaluation reads both. Rows whose prompts differ in length are
decoded in groups of one length each (a right-padded prompt would put padding between a
row's source and its answer, and shift the answer's positions).

Shapes: B batch, S source length, L output length, k beam size, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import checks
from .decoder_only import DecoderOnlyTransformer
from .decoding import _Beams, _check_finite, _search


def _check(model, src: Tensor, max_len: int, bos_id: int, eos_id: int | None) -> None:
    if not isinstance(model, DecoderOnlyTransformer):
        raise TypeError(f"model must be a transformer_lab.DecoderOnlyTransformer, got {type(model).__name__}")
    if not isinstance(src, Tensor) or src.dim() != 2 or src.numel() == 0:
        raise ValueError(f"src must be a (B, S) tensor of token ids, got {getattr(src, 'shape', src)!r}")
    checks.positive_int("max_len", max_len)
    checks.index("bos_id", bos_id, model.config.vocab_size)
    if eos_id is not None:
        checks.index("eos_id", eos_id, model.config.vocab_size)


def prompt_groups(src: Tensor, pad_id: int) -> list[tuple[Tensor, Tensor]]:
    """The rows of ``src`` (B, S) grouped by their number of non-padding tokens: a list of
    (row indices (b,), prompts (b, S_g) without padding), shortest first. A prompt must
    not start with padding (it is cut at its first one)."""
    lengths = (src != pad_id).long().cumprod(dim=1).sum(dim=1)  # (B,) tokens before the first padding
    if bool((lengths == 0).any()):
        raise ValueError("src must hold at least one token before its padding in every row")
    groups = []
    for length in sorted(set(lengths.tolist())):
        rows = (lengths == length).nonzero().flatten()  # (b,)
        groups.append((rows, src[rows, :length]))
    return groups


def _gather(model: DecoderOnlyTransformer, batch: int, parts: list[tuple[Tensor, Tensor]]) -> Tensor:
    """Each group's output put back at its rows, right-padded: (B, max L)."""
    width = max(out.size(1) for _, out in parts)
    device = parts[0][1].device
    result = torch.full((batch, width), model.config.pad_id, dtype=torch.long, device=device)
    for rows, out in parts:
        result[rows, : out.size(1)] = out
    return result


def _greedy(model, prompt: Tensor, max_len: int, bos_id: int, eos_id: int | None, use_cache: bool) -> Tensor:
    """One group: the prompt (b, P), then ``<bos>`` and the greedy tokens (b, <= max_len)."""
    cache = model.new_cache() if use_cache else None
    if use_cache:
        model.decode(prompt, cache=cache)  # fill the cache with the prompt's keys and values
    tokens = torch.full((prompt.size(0), 1), bos_id, dtype=torch.long, device=prompt.device)  # (b, 1)
    finished = torch.zeros(prompt.size(0), dtype=torch.bool, device=prompt.device)  # (b,)
    while tokens.size(1) < max_len and not bool(finished.all()):
        new = tokens[:, -1:] if use_cache else torch.cat([prompt, tokens], dim=1)  # (b, 1) or (b, P + L)
        logits = model.decode(new, cache=cache)[:, -1]  # (b, V)
        _check_finite(logits, tokens.size(1))
        next_token = logits.argmax(dim=-1).masked_fill(finished, model.config.pad_id)  # (b,)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (b, L + 1)
        if eos_id is not None:
            finished |= next_token == eos_id
    return tokens


@torch.no_grad()
def decoder_only_greedy_decode(
    model: DecoderOnlyTransformer,
    src: Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    use_cache: bool = True,
) -> Tensor:
    """Continue each prompt ``src`` (B, S) (right-padded) greedily: LongTensor
    (B, <= max_len) from ``bos_id``, ``model.config.pad_id`` after a row's ``eos_id``, as
    :func:`~transformer_lab.greedy_decode`. Without the cache every step runs the model
    on the whole prompt and prefix (same tokens, more work). Logits holding NaN or inf
    raise ``FloatingPointError`` naming the step."""
    _check(model, src, max_len, bos_id, eos_id)
    parts = [(rows, _greedy(model, prompt, max_len, bos_id, eos_id, use_cache))
             for rows, prompt in prompt_groups(src, model.config.pad_id)]
    return _gather(model, src.size(0), parts)


def _beam(model, prompt: Tensor, k: int, max_len: int, bos_id: int, eos_id: int, alpha: float) -> Tensor:
    """One group: beam search after the prompt (b, P); the steps are
    :func:`~transformer_lab.beam_search`'s."""
    batch = prompt.size(0)
    if max_len == 1:
        return torch.full((batch, 1), bos_id, dtype=torch.long, device=prompt.device)
    cache = model.new_cache()
    model.decode(prompt, cache=cache)  # the prompt once, then k copies of its keys and values
    cache.reorder(torch.arange(batch, device=prompt.device).repeat_interleave(k))  # (b*k) rows
    beams = _Beams(batch, k, bos_id, alpha, prompt.device)
    step_logits = lambda last: model.decode(last, cache=cache)[:, -1]  # (b*k, V)
    return _search(beams, step_logits, cache, eos_id, max_len).best(model.config.pad_id)


@torch.no_grad()
def decoder_only_beam_search(
    model: DecoderOnlyTransformer,
    src: Tensor,
    beam_size: int,
    max_len: int,
    bos_id: int,
    eos_id: int,
    length_penalty: float = 0.6,
) -> Tensor:
    """Beam search after each prompt ``src`` (B, S): the best hypothesis per row,
    LongTensor (B, <= max_len) from ``bos_id``, with the rules (length penalty, stopping)
    of :func:`~transformer_lab.beam_search`. Beam size 1 is greedy decoding."""
    _check(model, src, max_len, bos_id, eos_id)
    k = checks.positive_int("beam_size", beam_size)
    checks.finite_number("length_penalty", length_penalty, minimum=0.0)
    if 2 * k > model.config.vocab_size:
        raise ValueError(f"beam_size={k} needs a vocabulary of at least {2 * k} tokens, got {model.config.vocab_size}")
    parts = [(rows, _beam(model, prompt, k, max_len, bos_id, eos_id, length_penalty))
             for rows, prompt in prompt_groups(src, model.config.pad_id)]
    return _gather(model, src.size(0), parts)
