"""Byte-pair encoding (Sennrich, Haddow and Birch, 2016), learned from a small text.

Section 5.1 of Vaswani et al., 2017: the EN-DE sentences "were encoded using byte-pair
encoding, which has a shared source-target vocabulary of about 37000 tokens"; EN-FR used
32000 word pieces. The learner below is the algorithm of Sennrich et al. in a few lines,
for teaching (a production tokenizer such as Hugging Face ``tokenizers`` learns the same
merges, which the tests check):

1. split the text into words and each word into characters, plus an end-of-word symbol
   (``</w>``), so a merge never crosses a word boundary and a word can be rebuilt;
2. count every adjacent pair of symbols, weighted by the word's frequency;
3. merge the most frequent pair everywhere into one new symbol; repeat.

Ties go to the pair whose symbols entered the vocabulary first (characters in code-point
order, then merged symbols in the order they were made), the rule ``tokenizers`` follows.
Each merge adds one symbol to the vocabulary and shortens the text: the vocabulary size
trades against the sequence length n of Table 1.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Sequence

from .. import checks

END_OF_WORD = "</w>"
_WORD = re.compile(r"\w+|[^\w\s]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def pre_tokenize(text: str) -> list[str]:
    """Lower-cased words and punctuation marks of ``text``: "It's late." -> it ' s late ."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _WORD.findall(text.lower())


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, cut after ., ! or ? followed by white space."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def merge_pair(symbols: Sequence[str], pair: tuple[str, str]) -> list[str]:
    """``symbols`` with every occurrence of ``pair`` joined into one symbol, left to right."""
    out: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


@dataclasses.dataclass(frozen=True)
class BytePairEncoding:
    """The result of :func:`learn_bpe`: an alphabet and an ordered list of merges."""

    alphabet: tuple[str, ...]  # the initial symbols: characters and the end-of-word mark
    merges: tuple[tuple[str, str], ...]  # in the order they were learned
    counts: tuple[int, ...]  # how often each merged pair occurred when it was chosen
    end_of_word: str = END_OF_WORD

    def _first(self, num_merges: int | None) -> tuple[tuple[str, str], ...]:
        if num_merges is None:
            return self.merges
        checks.non_negative_int("num_merges", num_merges)
        return self.merges[:num_merges]

    def vocabulary(self, num_merges: int | None = None) -> list[str]:
        """The alphabet, then each new symbol of the first ``num_merges`` merges (all by default)."""
        vocab = dict.fromkeys(self.alphabet)
        vocab.update(dict.fromkeys(a + b for a, b in self._first(num_merges)))
        return list(vocab)

    def segment(self, word: str, num_merges: int | None = None) -> list[str]:
        """One word as symbols, after replaying the first ``num_merges`` merges in order."""
        symbols = list(word) + [self.end_of_word]
        for pair in self._first(num_merges):
            symbols = merge_pair(symbols, pair)
        return symbols

    def encode(self, text: str, num_merges: int | None = None) -> list[str]:
        """The symbols of ``text`` (see :func:`pre_tokenize`)."""
        return [s for word in pre_tokenize(text) for s in self.segment(word, num_merges)]


def _pair_counts(words: list[list[str]], freqs: list[int]) -> Counter:
    pairs: Counter = Counter()
    for symbols, freq in zip(words, freqs):
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += freq
    return pairs


def learn_bpe(text: str, num_merges: int, end_of_word: str = END_OF_WORD) -> BytePairEncoding:
    """Learn up to ``num_merges`` merges from ``text`` (fewer if every word is one symbol)."""
    checks.non_negative_int("num_merges", num_merges)
    counts = Counter(pre_tokenize(text))
    if not counts:
        raise ValueError("text must contain at least one word, got only white space")
    words = [list(word) + [end_of_word] for word in counts]
    freqs = list(counts.values())
    alphabet = sorted({s for symbols in words for s in symbols})
    rank = {s: i for i, s in enumerate(alphabet)}  # the order symbols entered the vocabulary
    merges, chosen = [], []
    for _ in range(num_merges):
        pairs = _pair_counts(words, freqs)
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -rank[p[0]], -rank[p[1]]))
        rank.setdefault(best[0] + best[1], len(rank))
        words = [merge_pair(symbols, best) for symbols in words]
        merges.append(best)
        chosen.append(pairs[best])
    return BytePairEncoding(tuple(alphabet), tuple(merges), tuple(chosen), end_of_word)


def tokens_per_sentence(bpe: BytePairEncoding, text: str, merge_counts: Sequence[int]) -> list[float]:
    """Mean number of symbols per sentence of ``text`` after the first m merges, for each m
    in ``merge_counts`` (ascending): the sequence length n that a vocabulary size gives."""
    merge_counts = [checks.non_negative_int("merge_counts[]", m) for m in merge_counts]
    if merge_counts != sorted(merge_counts) or (merge_counts and merge_counts[-1] > len(bpe.merges)):
        raise ValueError(
            f"merge_counts must ascend and not exceed the {len(bpe.merges)} merges learned, got {merge_counts}"
        )
    sentences = split_sentences(text)
    if not sentences:
        raise ValueError("text must contain at least one sentence, got only white space")
    counts = Counter(pre_tokenize(text))
    words = {word: list(word) + [bpe.end_of_word] for word in counts}
    means, done = [], 0
    for m in merge_counts:
        for pair in bpe.merges[done:m]:  # replay the merges once, in order
            words = {word: merge_pair(symbols, pair) for word, symbols in words.items()}
        done = m
        means.append(sum(counts[w] * len(s) for w, s in words.items()) / len(sentences))
    return means
