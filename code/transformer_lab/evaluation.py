"""Evaluation on a held-out split: token accuracy, exact match and corpus BLEU.

Section 6.1 of Vaswani et al., 2017 reports BLEU on newstest2014 after beam search (beam 4,
length penalty 0.6, maximum output length input + 50). The toy tasks are judged the same
way, plus two measures that make sense when there is exactly one right answer:

- ``token_accuracy``: share of target tokens whose most likely prediction under teacher
  forcing is correct (a cheap measure that needs no decoding);
- ``exact_match``: share of examples whose decoded output equals the reference;
- ``bleu``: corpus BLEU of the decoded outputs (sacrebleu). Character-level targets
  (dates "2026-11-22", the symbol tasks) are scored on characters (``tokenize="char"``),
  word-level ones with sacrebleu's standard ``13a`` tokenizer.

Shapes: B batch, S source length, T target length.
"""

from __future__ import annotations

import torch
from torch import nn

from .data import BOS_ID, EOS_ID, Vocabulary
from .decoding import generate
from .training import LabelSmoothingLoss, batch_loss_sum


def corpus_bleu(hypotheses: list[str], references: list[str], char_level: bool = False) -> float:
    """Corpus BLEU (0-100) with sacrebleu; ``char_level`` scores characters as tokens."""
    import sacrebleu

    if len(hypotheses) != len(references):
        raise ValueError(
            f"hypotheses and references must have the same length, got {len(hypotheses)} and {len(references)}"
        )
    if not hypotheses:
        return 0.0
    tokenize = "char" if char_level else "13a"
    return float(sacrebleu.corpus_bleu(hypotheses, [references], tokenize=tokenize).score)


def _unwrap(model: nn.Module) -> nn.Module:
    return getattr(model, "module", model)  # DistributedDataParallel keeps the model in .module


@torch.no_grad()
def evaluate(
    model: nn.Module,
    loader,
    tgt_vocab: Vocabulary,
    loss_fn: LabelSmoothingLoss | None = None,
    beam_size: int = 1,
    length_penalty: float = 0.6,
    extra_length: int = 50,
    device: torch.device | str | None = None,
    max_examples: int | None = None,
) -> dict:
    """Loss, token accuracy, exact match and BLEU of ``model`` on ``loader``'s batches.

    Outputs are decoded greedily (``beam_size=1``) or by beam search, up to source length
    + ``extra_length`` tokens (Section 6.1 uses + 50), and compared with the references
    as text. Returns a dict with ``loss``, ``token_accuracy``, ``exact_match``, ``bleu``,
    ``examples`` and ``samples`` (the first three (hypothesis, reference) pairs).
    """
    net = _unwrap(model)
    was_training = net.training
    net.eval()
    loss_fn = loss_fn if loss_fn is not None else LabelSmoothingLoss(0.0)
    device = torch.device(device) if device is not None else next(net.parameters()).device
    loss_sum = correct = tokens = exact = 0
    hypotheses: list[str] = []
    references: list[str] = []
    for batch in loader:
        if max_examples is not None:  # exactly max_examples: the last batch is cut short
            if len(hypotheses) >= max_examples:
                break
            batch = batch.head(max_examples - len(hypotheses))
        batch = batch.to(device)
        loss, right = batch_loss_sum(net, batch, loss_fn)
        loss_sum += float(loss)
        correct += int(right)
        tokens += batch.tgt_tokens
        out = generate(net, batch.src, BOS_ID, EOS_ID, beam_size, length_penalty, extra_length)
        for hyp_ids, ref_ids in zip(out.tolist(), batch.tgt_out.tolist()):
            hyp, ref = tgt_vocab.decode(hyp_ids), tgt_vocab.decode(ref_ids)
            hypotheses.append(hyp)
            references.append(ref)
            exact += hyp == ref
    net.train(was_training)
    n = len(hypotheses)
    return {
        "loss": loss_sum / max(tokens, 1),
        "token_accuracy": correct / max(tokens, 1),
        "exact_match": exact / max(n, 1),
        "bleu": corpus_bleu(hypotheses, references, char_level=tgt_vocab.tokenize == "char"),
        "examples": n,
        "samples": list(zip(hypotheses[:3], references[:3])),
    }
