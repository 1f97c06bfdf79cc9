"""Exercise 14: beam search with GNMT's length penalty."""

from __future__ import annotations

from functools import partial

import torch

import transformer_lab as tl
from transformer_lab import decoding as package_decoding

from .core import Exercise, Mistake, Part, Property
from .decoding import small_model, source
from .inputs import BOS, EOS, PAD

PENALTY_CALLS = ((1, 0.6), (7, 0.6), (10, 0.0), (3, 2.0), (12, 1.0))


def run_penalty(ns, rec):
    for length, alpha in PENALTY_CALLS:
        rec(f"gnmt_length_penalty({length}, {alpha})", lambda: ns.gnmt_length_penalty(length, alpha))


def _penalty(formula):
    def gnmt_length_penalty(length, alpha):
        return formula(length, alpha)
    return gnmt_length_penalty


# (model seed, EOS bias, beam size, max_len, alpha): chosen so that every known mistake
# changes at least one answer (tests/test_exercises_rules.py checks that each is told apart);
# counting BOS in the length penalty changes only the last one of 384 cases searched.
BEAM_CASES = ((5, 1.0, 3, 10, 1.0), (0, 0.5, 2, 10, 0.6), (5, 1.0, 3, 10, 2.0), (3, 0.0, 3, 1, 0.6),
              (1, 0.0, 2, 10, 2.0), (5, 0.0, 3, 10, 1.0))


def run_beam(ns, rec):
    src = source()
    rec.watch(src=src)
    for seed, bias, k, max_len, alpha in BEAM_CASES:
        model = small_model(seed, bias)
        rec(f"beam_search(model {seed} (EOS bias {bias}), src (2, 7), beam_size={k}, max_len={max_len}, "
            f"length_penalty={alpha})", lambda: ns.beam_search(model, src, k, max_len, BOS, EOS, alpha))
    seed, bias, k, max_len, alpha = BEAM_CASES[0]
    model = small_model(seed, bias)
    rec(f"batch size 1: beam_search(model {seed} (EOS bias {bias}), src (1, 7), beam_size={k}, max_len={max_len}, "
        f"length_penalty={alpha})", lambda: ns.beam_search(model, src[1:], k, max_len, BOS, EOS, alpha))


@torch.no_grad()
def _beam(model, src, beam_size, max_len, bos_id, eos_id, length_penalty=0.6, src_mask=None, *,
          penalty=True, per_step=False, reorder=True, all_zero=False, raw=False, beams=None):
    """The package's beam search (its own bookkeeping, ``_Beams``) with one step done
    another way."""
    k = beam_size
    if max_len == 1:
        return torch.full((src.size(0), 1), bos_id, dtype=torch.long)
    memory, src_mask = package_decoding._encode(model, src, src_mask)
    memory, src_mask = memory.repeat_interleave(k, dim=0), src_mask.repeat_interleave(k, dim=0)  # (B*k, ...)
    alpha = length_penalty if penalty else 0.0
    beams = (beams or package_decoding._Beams)(src.size(0), k, bos_id, 0.0 if per_step else alpha, src.device)
    if all_zero:
        beams.scores.fill_(0.0)
    cache = model.new_cache()
    for step in range(1, max_len):
        logits = model.decode(beams.tokens[:, -1:], memory, src_mask, cache=cache)[:, -1]  # (B*k, V)
        log_p = logits.float() if raw else torch.log_softmax(logits.float(), dim=-1)
        top_scores, beam, token = beams.candidates(log_p)
        if per_step:  # the running score is divided by lp at every step, compounding
            top_scores = top_scores / tl.gnmt_length_penalty(step, alpha)
        is_eos = token == eos_id
        beams.finish(step, top_scores, beam, token, is_eos, last=step == max_len - 1)
        if all(beams.done):
            break
        rows = beams.advance(top_scores, beam, token, is_eos)
        if reorder:
            cache.reorder(rows)
    return beams.best(model.config.pad_id)


class _FirstKFinished(package_decoding._Beams):
    def _cannot_improve(self, b, step, top_scores, is_eos):
        return len(self.finished[b]) >= self.k


class _PenaltyCountsBOS(package_decoding._Beams):
    def finish(self, step, top_scores, beam, token, is_eos, last):
        super().finish(step + 1, top_scores, beam, token, is_eos, last)  # |Y| counted with BOS


def _beam_mistake(name, says, slide, **flags):
    return Mistake(name, says, slide, {"beam_search": partial(_beam, **flags)})


def _beam_one_is_greedy(ns) -> bool:
    model, src = small_model(2, 0.5), source()
    return torch.equal(ns.beam_search(model, src, 1, 9, BOS, EOS), tl.greedy_decode(model, src, 9, BOS, EOS))


def _layout(ns) -> bool:
    out = ns.beam_search(small_model(0, 0.5), source(), 2, 10, BOS, EOS)
    rows = [row for row in out.tolist() if EOS in row]
    return bool((out[:, 0] == BOS).all()) and all(t == PAD for row in rows for t in row[row.index(EOS) + 1:])


BEAM = Exercise(14, "ex14_beam_search", "beam search with the length penalty", "beam",
                {"gnmt_length_penalty": tl.gnmt_length_penalty, "beam_search": tl.beam_search}, (
    Part("gnmt_length_penalty", run_penalty, tl.gnmt_length_penalty, mistakes=(
        Mistake("plain length normalisation", "the penalty is |Y|^alpha; GNMT's is ((5 + |Y|) / 6)^alpha, "
                "which is 1 for one token and grows more slowly.", "beam",
                {"gnmt_length_penalty": _penalty(lambda n, a: n**a)}),
        Mistake("power of the numerator only", "the penalty is (5 + |Y|)^alpha / 6; the whole ratio "
                "(5 + |Y|) / 6 is raised to alpha.", "beam",
                {"gnmt_length_penalty": _penalty(lambda n, a: (5.0 + n) ** a / 6.0)}),
    )),
    Part("beam_search", run_beam, tl.beam_search, mistakes=(
        _beam_mistake("length penalty missing", "finished hypotheses are compared by log P(Y) alone, which "
                      "favours short ones; divide by lp(|Y|) = ((5 + |Y|) / 6)^alpha.", "beam", penalty=False),
        _beam_mistake("length penalty applied at every step", "the running score is divided by lp at every "
                      "step, so the penalty compounds; divide a hypothesis' total log-probability once, "
                      "when it finishes.", "beam", per_step=True),
        _beam_mistake("cache not reordered", "the key/value cache keeps its rows when the beams are "
                      "reordered, so a hypothesis continues with another one's history; call "
                      "cache.reorder(rows) after choosing the beams.", "kv-cache", reorder=False),
        _beam_mistake("all beams start at 0", "every beam starts with score 0, so the first step fills the "
                      "beam with k copies of the same tokens; start one beam at 0 and the others at -inf.",
                      "beam-tree", all_zero=True),
        _beam_mistake("logits summed", "the scores add raw logits; a hypothesis' score is the sum of "
                      "log-probabilities (log_softmax of the logits).", "beam", raw=True),
        _beam_mistake("stops at the first k finished", "an example stops as soon as k hypotheses have "
                      "finished, though a live prefix may still beat them; stop when the k-th best finished "
                      "score is at least the best live prefix's, normalised at the current length.", "beam",
                      beams=_FirstKFinished),
        _beam_mistake("length penalty counts BOS", "|Y| in lp(Y) = ((5 + |Y|) / 6)^alpha counts BOS; it "
                      "counts the generated tokens, EOS included (step n has generated n).", "beam",
                      beams=_PenaltyCountsBOS),
    ), properties=(
        Property("beam size 1 gives greedy decoding", _beam_one_is_greedy),
        Property("every row starts with BOS and holds only padding after its EOS", _layout),
    )),
))
