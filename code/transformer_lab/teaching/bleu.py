"""BLEU (Papineni, Roukos, Ward and Zhu, 2002) by hand, on one sentence pair.

The paper reports BLEU on newstest2014 (Section 6.1, Table 2). The score combines
modified n-gram precisions (n = 1..4) by a geometric mean and multiplies by a brevity
penalty:

    p_n  = sum over hypothesis n-grams of min(count in hypothesis, count in reference)
           / number of hypothesis n-grams                   ("modified": clipped counts)
    BP   = 1 if c > r else exp(1 - r / c)                    (c, r: hypothesis, reference length)
    BLEU = BP * exp(sum_n (1/4) log p_n)                     (0 if some p_n = 0)

This helper scores one hypothesis against one reference on white-space tokens, for a
slide; it equals ``sacrebleu`` with ``tokenize="none"``, no smoothing and the full order
(tested). The package's :func:`transformer_lab.corpus_bleu` is the real thing: corpus
BLEU sums the clipped counts over all sentences before dividing.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

from .. import checks


def ngrams(tokens: list[str], n: int) -> Counter:
    """How often each n-gram (a tuple of n tokens) occurs in ``tokens``."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


@dataclasses.dataclass(frozen=True)
class SentenceBleu:
    """The pieces of BLEU for one hypothesis and one reference."""

    matches: tuple[int, ...]  # clipped n-gram matches, n = 1..max_order
    totals: tuple[int, ...]  # hypothesis n-grams, n = 1..max_order
    hyp_len: int  # c
    ref_len: int  # r

    @property
    def precisions(self) -> tuple[float, ...]:
        """Modified precisions p_n (0 where the hypothesis has no n-gram)."""
        return tuple(m / t if t else 0.0 for m, t in zip(self.matches, self.totals))

    @property
    def brevity_penalty(self) -> float:
        """1 if the hypothesis is longer than the reference, else exp(1 - r / c)."""
        if self.hyp_len > self.ref_len:
            return 1.0
        return math.exp(1.0 - self.ref_len / self.hyp_len) if self.hyp_len else 0.0

    @property
    def score(self) -> float:
        """BLEU on sacrebleu's scale, 0 to 100."""
        if min(self.precisions) == 0.0:
            return 0.0
        log_mean = sum(math.log(p) for p in self.precisions) / len(self.precisions)
        return 100.0 * self.brevity_penalty * math.exp(log_mean)


def sentence_bleu(hypothesis: str, reference: str, max_order: int = 4) -> SentenceBleu:
    """BLEU's counts for ``hypothesis`` against ``reference`` (white-space tokens)."""
    for name, text in (("hypothesis", hypothesis), ("reference", reference)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    checks.positive_int("max_order", max_order)
    hyp, ref = hypothesis.split(), reference.split()
    matches, totals = [], []
    for n in range(1, max_order + 1):
        hyp_ngrams, ref_ngrams = ngrams(hyp, n), ngrams(ref, n)
        matches.append(sum(min(c, ref_ngrams[g]) for g, c in hyp_ngrams.items()))
        totals.append(sum(hyp_ngrams.values()))
    return SentenceBleu(tuple(matches), tuple(totals), len(hyp), len(ref))
