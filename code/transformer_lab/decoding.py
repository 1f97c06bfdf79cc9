"""Decoding: greedy search and beam search (Section 6.1 of Vaswani et al., 2017).

"We used beam search with a beam size of 4 and length penalty alpha = 0.6 [...]. We set
the maximum output length during inference to input length + 50, but terminate early
when possible." The length penalty is GNMT's (Wu et al., 2016):

    lp(Y) = ((5 + |Y|) / 6) ** alpha,   score(Y) = log P(Y | X) / lp(Y)

Both decoders feed one new token per step to the decoder and keep every layer's keys and
values in a cache, so a step projects only the new token; its attention still reads every
cached position, so a late step costs somewhat more than an early one (O(t d) more work).

Shapes: B batch, S source length, L output length, k beam size, V vocabulary.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import Tensor

from . import checks
from .model import Transformer


def _check_src(src: Tensor) -> None:
    if not isinstance(src, Tensor) or src.dim() != 2:
        raise ValueError(f"src must be a (B, S) tensor of token ids, got {getattr(src, 'shape', src)!r}")


def _check(model, src: Tensor, max_len: int, bos_id: int, eos_id: int | None) -> None:
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lab.Transformer, got {type(model).__name__}")
    _check_src(src)
    checks.positive_int("max_len", max_len)
    checks.index("bos_id", bos_id, model.config.tgt_vocab_size)
    if eos_id is not None:
        checks.index("eos_id", eos_id, model.config.tgt_vocab_size)


def _check_finite(logits: Tensor, step: int) -> None:
    """Stop at the first step whose logits (B, V) hold NaN or inf: every choice after it
    would be junk (argmax of NaN is an arbitrary id; log-softmax spreads NaN over the beam).
    One reduction per step; the ``bool`` waits for it, as the next step's input does anyway."""
    if not bool(torch.isfinite(logits).all()):
        rows = (~torch.isfinite(logits)).any(dim=-1).nonzero().flatten().tolist()
        raise FloatingPointError(
            f"decoding step {step}: the model's logits are not finite (NaN or inf) in batch row(s) {rows[:8]}; "
            f"its weights or inputs hold NaN or inf (a diverged training run, a damaged checkpoint)"
        )


def gnmt_length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6) ** alpha; alpha = 0 turns it off."""
    return ((5.0 + length) / 6.0) ** alpha


def _encode(model: Transformer, src: Tensor, src_mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """The memory (B, S, D) and the source mask every decoding step reads with it."""
    if src_mask is None:
        src_mask = model.src_mask(src)  # (B, 1, 1, S)
    return model.encode(src, src_mask), src_mask


@torch.no_grad()
def greedy_steps(
    model: Transformer,
    src: Tensor,
    bos_id: int,
    eos_id: int | None = None,
    use_cache: bool = True,
    src_mask: Tensor | None = None,
) -> Iterator[Tensor]:
    """Greedy decoding as a stream: yield the tokens so far, LongTensor (B, L), first the
    ``bos_id`` column (L = 1), then one more column per step, without end.

    After a row's ``eos_id`` the row holds ``model.config.pad_id``; with ``eos_id=None`` no
    row ever ends. The caller decides when to stop (:func:`greedy_decode` does at
    ``max_len`` or when every row has ended). Without the cache every step re-runs the
    decoder on the whole prefix (same tokens, quadratically more work). Logits holding NaN
    or inf raise ``FloatingPointError`` naming the step (step n predicts token n).
    """
    memory, src_mask = _encode(model, src, src_mask)  # (B, S, D)
    tokens = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)  # (B,)
    cache = model.new_cache() if use_cache else None
    while True:
        yield tokens
        new = tokens[:, -1:] if use_cache else tokens  # (B, 1) with the cache, else (B, L)
        logits = model.decode(new, memory, src_mask, cache=cache)[:, -1]  # (B, V)
        _check_finite(logits, tokens.size(1))
        next_token = logits.argmax(dim=-1).masked_fill(finished, model.config.pad_id)  # (B,)
        tokens = torch.cat([tokens, next_token[:, None]], dim=1)  # (B, L + 1)
        if eos_id is not None:
            finished |= next_token == eos_id


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
    ``model.config.pad_id``. The steps are :func:`greedy_steps`'.
    """
    _check(model, src, max_len, bos_id, eos_id)
    for tokens in greedy_steps(model, src, bos_id, eos_id, use_cache, src_mask):
        ended = (tokens[:, 1:] == eos_id).any(dim=1)  # (B,)
        if tokens.size(1) == max_len or bool(ended.all()):
            return tokens
    raise AssertionError("greedy_steps never ends")


class _Beams:
    """Beam search's bookkeeping for B examples of k hypotheses each: the live prefixes
    (rows b*k .. b*k + k - 1 of ``tokens`` belong to example b), their scores, and the
    finished hypotheses with their length-normalised scores."""

    def __init__(self, batch: int, k: int, bos_id: int, alpha: float, device):
        self.k, self.alpha = k, alpha
        self.tokens = torch.full((batch * k, 1), bos_id, dtype=torch.long, device=device)  # (B*k, 1)
        self.scores = torch.full((batch, k), float("-inf"), device=device)  # (B, k)
        self.scores[:, 0] = 0.0  # all beams start equal: expand only the first one
        self.finished: list[list[tuple[float, Tensor]]] = [[] for _ in range(batch)]
        self.done = [False] * batch
        self.block = torch.arange(batch, device=device)[:, None] * k  # (B, 1): first row of each example

    def candidates(self, log_p: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The best 2k extensions per example: scores, beam and token, each (B, 2k)."""
        vocab = log_p.size(-1)
        scores = (self.scores.view(-1, 1) + log_p).view(len(self.done), self.k * vocab)  # (B, k*V)
        top_scores, top_index = scores.topk(2 * self.k, dim=-1)  # (B, 2k)
        return top_scores, top_index // vocab, top_index % vocab

    def finish(self, step: int, top_scores: Tensor, beam: Tensor, token: Tensor, is_eos: Tensor, last: bool) -> None:
        """Finish the hypotheses ending in EOS among the top k (every live one at the last step)."""
        for b in range(len(self.done)):
            if self.done[b]:
                continue
            for rank in range(self.k):
                score = float(top_scores[b, rank])
                if score == float("-inf") or not (last or is_eos[b, rank]):
                    continue
                row = int(self.block[b, 0] + beam[b, rank])
                hypothesis = torch.cat([self.tokens[row], token[b, rank].view(1)])
                self.finished[b].append((score / gnmt_length_penalty(step, self.alpha), hypothesis))
            self.done[b] = last or self._cannot_improve(b, step, top_scores[b], is_eos[b])

    def _cannot_improve(self, b: int, step: int, top_scores: Tensor, is_eos: Tensor) -> bool:
        """Example b is done once it has k finished hypotheses and the k-th best of them
        scores at least as well as its best live prefix, normalised at this length.
        Stopping at the first k finished would let the EOS extensions of weak beams end the
        search while a far better prefix is still growing (a search error: a confident
        model's beam then answered worse than greedy). With k = 1 the rule stops exactly
        where greedy decoding does: the finished hypothesis was the best candidate."""
        if len(self.finished[b]) < self.k:
            return False
        live = top_scores[~is_eos]  # (<= 2k,), best first
        if live.numel() == 0 or float(live[0]) == float("-inf"):
            return True
        kth_best = sorted((score for score, _ in self.finished[b]), reverse=True)[self.k - 1]
        return kth_best >= float(live[0]) / gnmt_length_penalty(step, self.alpha)

    def advance(self, top_scores: Tensor, beam: Tensor, token: Tensor, is_eos: Tensor) -> Tensor:
        """Keep the k best candidates that do not end in EOS; return the rows (B*k,) they extend."""
        k = self.k
        order = (is_eos.long() * 2 * k + torch.arange(2 * k, device=token.device)).argsort(dim=-1)[:, :k]
        self.scores = top_scores.gather(1, order)  # (B, k)
        self.scores[is_eos.gather(1, order)] = float("-inf")
        rows = (self.block + beam.gather(1, order)).view(-1)  # (B*k,) rows that survive
        self.tokens = torch.cat([self.tokens[rows], token.gather(1, order).view(-1, 1)], dim=1)  # (B*k, L+1)
        return rows

    def best(self, pad_id: int) -> Tensor:
        """The best finished hypothesis of each example, padded: LongTensor (B, L)."""
        best = [max(hyps, key=lambda h: h[0])[1] for hyps in self.finished]
        out = torch.full((len(best), max(len(h) for h in best)), pad_id, dtype=torch.long,
                         device=self.tokens.device)
        for b, hypothesis in enumerate(best):
            out[b, : len(hypothesis)] = hypothesis
        return out


def _search(beams: "_Beams", step_logits, cache, eos_id: int, max_len: int) -> "_Beams":
    """Beam search's loop, shared by the encoder-decoder and the decoder-only model:
    ``step_logits(last_tokens)`` gives the (rows, V) logits of one step through ``cache``;
    each step extends every beam, sets the finished ones aside and reorders the cache to
    the beams kept. Returns ``beams``, finished or at ``max_len``."""
    for step in range(1, max_len):
        logits = step_logits(beams.tokens[:, -1:])  # (rows, V)
        _check_finite(logits, step)
        top_scores, beam, token = beams.candidates(torch.log_softmax(logits.float(), dim=-1))
        is_eos = token == eos_id  # (batch, 2k)
        beams.finish(step, top_scores, beam, token, is_eos, last=step == max_len - 1)
        if all(beams.done):
            break
        cache.reorder(beams.advance(top_scores, beam, token, is_eos))
    return beams


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
    others go on. An example stops once it has k finished hypotheses and the k-th best of
    them scores at least as well as its best live prefix normalised at the current length
    (stopping at the first k finished lets weak beams' EOS end the search too early); at
    ``max_len`` the live ones are finished as they are. Beam size 1 is greedy decoding. Logits holding NaN
    or inf raise ``FloatingPointError`` naming the step, as in greedy decoding.
    """
    _check(model, src, max_len, bos_id, eos_id)
    k = checks.positive_int("beam_size", beam_size)
    checks.finite_number("length_penalty", length_penalty, minimum=0.0)
    vocab = model.config.tgt_vocab_size
    if 2 * k > vocab:
        raise ValueError(f"beam_size={k} needs a vocabulary of at least {2 * k} tokens, got {vocab}")
    if max_len == 1:
        return torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
    memory, src_mask = _encode(model, src, src_mask)
    memory = memory.repeat_interleave(k, dim=0)  # (B*k, S, D)
    src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*k, 1, 1, S)
    beams, cache = _Beams(src.size(0), k, bos_id, length_penalty, src.device), model.new_cache()
    # one step: the last tokens of the B*k rows through the decoder with the cache -> (B*k, V)
    step_logits = lambda last: model.decode(last, memory, src_mask, cache=cache)[:, -1]
    return _search(beams, step_logits, cache, eos_id, max_len).best(model.config.pad_id)


def generate(
    model: Transformer,
    src: Tensor,
    bos_id: int,
    eos_id: int,
    beam_size: int = 1,
    length_penalty: float = 0.6,
    extra_length: int = 50,
    src_mask: Tensor | None = None,
) -> Tensor:
    """Section 6.1's decoding: (B, S) -> LongTensor (B, L) of at most S + ``extra_length``
    tokens ("input length + 50"), capped at the model's ``max_len``; greedy when
    ``beam_size`` is 1 (beam size 1 is greedy decoding), beam search otherwise."""
    checks.positive_int("beam_size", beam_size)
    checks.finite_number("length_penalty", length_penalty, minimum=0.0)
    checks.non_negative_int("extra_length", extra_length)
    _check_src(src)
    max_len = min(src.size(1) + extra_length, model.config.max_len)
    if beam_size == 1:
        return greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=src_mask)
    return beam_search(model, src, beam_size, max_len, bos_id, eos_id, length_penalty, src_mask)
