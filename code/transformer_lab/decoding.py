"""Decoding: greedy search and beam search (Section 6.1 of Vaswani et al., 2017).

"We used beam search with a beam size of 4 and length penalty alpha = 0.6 [...]. We set
the maximum output length during inference to input length + 50, but terminate early
when possible." The length penalty is GNMT's (Wu et al., 2016):

    lp(Y) = ((5 + |Y|) / 6) ** alpha,   score(Y) = log P(Y | X) / lp(Y)

Both decoders feed one new token per step to the decoder and keep every layer's keys and
values in a cache, so a step costs the same at the end of the output as at its start.

Shapes: B batch, S source length, L output length, k beam size, V vocabulary.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .model import Transformer


def _check(model, src: Tensor, max_len: int, bos_id: int, eos_id: int) -> None:
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lab.Transformer, got {type(model).__name__}")
    if not isinstance(src, Tensor) or src.dim() != 2:
        raise ValueError(f"src must be a (B, S) tensor of token ids, got {getattr(src, 'shape', src)!r}")
    if not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"max_len must be a positive int, got {max_len!r}")
    vocab = model.config.tgt_vocab_size
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        if not 0 <= value < vocab:
            raise ValueError(f"{name} must be in [0, {vocab}), got {value}")


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6) ** alpha; alpha = 0 turns it off."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
) -> Tensor:
    """Pick the most likely next token until EOS: (B, S) -> LongTensor (B, <= max_len).

    Each row starts with ``bos_id``; after its ``eos_id`` the row holds
    ``model.config.pad_id``. Without the cache every step re-runs the decoder on the
    whole prefix (same tokens, quadratically more work).
    """
    _check(model, src, max_len, bos_id, eos_id)
    pad_id = model.config.pad_id
    if src_mask is None:
        src_mask = model.src_mask(src)
    memory = model.encode(src, src_mask)  # (B, S, D)
    tokens = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    cache = model.new_cache() if use_cache else None
    for _ in range(max_len - 1):
        if use_cache:
            logits = model.decode(tokens[:, -1:], memory, src_mask, cache=cache)  # (B, 1, V)
        else:
            logits = model.decode(tokens, memory, src_mask)  # (B, L, V)
        next_token = logits[:, -1].argmax(dim=-1)  # (B,)
        next_token = next_token.masked_fill(finished, pad_id)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, L + 1)
        finished |= next_token == eos_id
        if bool(finished.all()):
            break
    return tokens


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: Tensor,
    beam_size: int,
    max_len: int,
    bos_id: int,
    eos_id: int,
    length_penalty: float = 0.6,
    src_mask: Tensor | None = None,
) -> Tensor:
    """Keep the ``beam_size`` best prefixes per example; return the best hypothesis.

    (B, S) -> LongTensor (B, <= max_len), laid out like :func:`greedy_decode`.

    At each step every live prefix is extended by every token and the best 2k
    candidates are kept: those ending in EOS among the top k are finished and scored
    with the length penalty (|Y| counts the generated tokens, EOS included); the best k
    others go on. An example stops when k hypotheses are finished; at ``max_len`` the
    live ones are finished as they are. Beam size 1 is greedy decoding.
    """
    _check(model, src, max_len, bos_id, eos_id)
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
    alpha = length_penalty
    k, batch, device = beam_size, src.size(0), src.device
    vocab = model.config.tgt_vocab_size
    if 2 * k > vocab:
        raise ValueError(f"beam_size={k} needs a vocabulary of at least {2 * k} tokens, got {vocab}")
    if src_mask is None:
        src_mask = model.src_mask(src)
    if max_len == 1:
        return torch.full((batch, 1), bos_id, dtype=torch.long, device=device)
    memory = model.encode(src, src_mask)  # (B, S, D)
    memory = memory.repeat_interleave(k, dim=0)  # (B*k, S, D)
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*k, 1, 1, S)

    tokens = torch.full((batch * k, 1), bos_id, dtype=torch.long, device=device)  # (B*k, 1)
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start equal: expand only the first one
    finished: list[list[tuple[float, Tensor]]] = [[] for _ in range(batch)]
    done = [False] * batch
    cache = model.new_cache()
    block = torch.arange(batch, device=device)[:, None] * k  # (B, 1): first row of each example

    for step in range(1, max_len):
        logits = model.decode(tokens[:, -1:], memory, src_mask, cache=cache)[:, -1]  # (B*k, V)
        log_p = torch.log_softmax(logits.float(), dim=-1)
        candidates = (scores.view(-1, 1) + log_p).view(batch, k * vocab)  # (B, k*V)
        top_scores, top_index = candidates.topk(2 * k, dim=-1)  # (B, 2k)
        beam, token = top_index // vocab, top_index % vocab  # (B, 2k) each
        is_eos = token == eos_id
        last_step = step == max_len - 1

        # Finish hypotheses: EOS among the top k (or every live one at the last step).
        for b in range(batch):
            if done[b]:
                continue
            for rank in range(k):
                score = float(top_scores[b, rank])
                if score == float("-inf") or not (last_step or is_eos[b, rank]):
                    continue
                row = int(block[b, 0] + beam[b, rank])
                hypothesis = torch.cat([tokens[row], token[b, rank].view(1)])
                normalised = score / gnmt_length_penalty(step, alpha)
                finished[b].append((normalised, hypothesis))
            if len(finished[b]) >= k or last_step:
                done[b] = True
        if all(done):
            break

        # The k best candidates that do not end in EOS go on to the next step.
        order = (is_eos.long() * 2 * k + torch.arange(2 * k, device=device)).argsort(dim=-1)[:, :k]
        scores = top_scores.gather(1, order)  # (B, k)
        scores[is_eos.gather(1, order)] = float("-inf")
        rows = (block + beam.gather(1, order)).view(-1)  # (B*k,) rows that survive
        tokens = torch.cat([tokens[rows], token.gather(1, order).view(-1, 1)], dim=1)  # (B*k, L+1)
        cache.reorder(rows)

    best = [max(hyps, key=lambda h: h[0])[1] for hyps in finished]
    out = torch.full((batch, max(len(h) for h in best)), model.config.pad_id, dtype=torch.long, device=device)
    for b, hypothesis in enumerate(best):
        out[b, : len(hypothesis)] = hypothesis
    return out

