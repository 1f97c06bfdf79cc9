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

A character the text never uses has no symbol, so a word containing one cannot be
segmented into the vocabulary. Byte-level BPE (GPT-2: Radford et al., 2019, Section 2.2)
starts instead from the 256 byte values of UTF-8, so every text is a sequence of known
symbols: :func:`learn_byte_bpe` learns merges the same way on the same words, over that
alphabet. Each byte is written as one printable character (:data:`BYTE_SYMBOLS`, GPT-2's
map), so a symbol stays a string and the learner above works unchanged; on a text of ASCII
characters alone it learns exactly the merges of :func:`learn_bpe` (tested).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from typing import Sequence

from .. import checks

END_OF_WORD = "</w>"


def _byte_symbols() -> tuple[str, ...]:
    """Byte b as one printable character: itself where Latin-1 prints it ("!".."~",
    "¡".."¬", "®".."ÿ"), else the next unused character from U+0100 on, in byte order
    (GPT-2's map), so no symbol is white space or a control character."""
    printable = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)}
    symbols, extra = [], 0
    for b in range(256):
        if b in printable:
            symbols.append(chr(b))
        else:
            symbols.append(chr(256 + extra))
            extra += 1
    return tuple(symbols)


#: The 256 byte values as symbols, ``BYTE_SYMBOLS[b]`` for byte b (see :func:`_byte_symbols`).
BYTE_SYMBOLS = _byte_symbols()
_BYTE_OF = {symbol: b for b, symbol in enumerate(BYTE_SYMBOLS)}


def byte_symbols(word: str) -> list[str]:
    """The UTF-8 bytes of ``word``, one symbol each: "jazz" -> j a z z; "é" -> Ã © (two bytes)."""
    if not isinstance(word, str):
        raise TypeError(f"word must be a str, got {type(word).__name__}")
    return [BYTE_SYMBOLS[b] for b in word.encode("utf-8")]


def symbol_bytes(symbol: str) -> bytes:
    """The bytes a byte-level symbol stands for (the inverse of :func:`byte_symbols`)."""
    try:
        return bytes(_BYTE_OF[c] for c in symbol)
    except KeyError as e:
        raise ValueError(f"symbol must be made of byte symbols (BYTE_SYMBOLS), got {symbol!r} with {e.args[0]!r}") from None
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

    alphabet: tuple[str, ...]  # the initial symbols: characters (or the 256 bytes) and the end-of-word mark
    merges: tuple[tuple[str, str], ...]  # in the order they were learned
    counts: tuple[int, ...]  # how often each merged pair occurred when it was chosen
    end_of_word: str = END_OF_WORD
    byte_level: bool = False  # words split into UTF-8 bytes (BYTE_SYMBOLS), not characters

    def split(self, word: str) -> list[str]:
        """``word`` as initial symbols, before any merge: its characters (or bytes), then the end-of-word mark."""
        return (byte_symbols(word) if self.byte_level else list(word)) + [self.end_of_word]

    def show(self, symbol: str) -> str:
        """``symbol`` as a reader reads it: a character-level symbol as it is; a byte-level
        one as the text its bytes spell, a byte that is not a whole UTF-8 character as
        ``\\xNN`` (the end-of-word mark kept as it is)."""
        if not self.byte_level:
            return symbol
        end = symbol.endswith(self.end_of_word)
        body = symbol[: -len(self.end_of_word)] if end else symbol
        return symbol_bytes(body).decode("utf-8", errors="backslashreplace") + (self.end_of_word if end else "")

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
        symbols = self.split(word)
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
    """Learn up to ``num_merges`` merges from ``text`` (fewer if every word is one symbol),
    starting from the characters the text uses."""
    return _learn(text, num_merges, end_of_word, byte_level=False)


def learn_byte_bpe(text: str, num_merges: int, end_of_word: str = END_OF_WORD) -> BytePairEncoding:
    """:func:`learn_bpe` on the UTF-8 bytes of the same words (byte-level BPE, as GPT-2):
    the alphabet is all 256 bytes (:data:`BYTE_SYMBOLS`) and the end-of-word mark, whether
    the text uses them or not, so any word segments into vocabulary symbols. Ties go to
    the pair entered first, symbols ranked as :func:`learn_bpe` ranks them (by the
    characters that write them), so the text's merges do not depend on the bytes it lacks."""
    if not isinstance(end_of_word, str) or not end_of_word or (len(end_of_word) == 1 and end_of_word in _BYTE_OF):
        raise ValueError(f"end_of_word must be a non-empty str that is not a byte symbol (BYTE_SYMBOLS), "
                         f"got {end_of_word!r}")
    return _learn(text, num_merges, end_of_word, byte_level=True)


def _learn(text: str, num_merges: int, end_of_word: str, byte_level: bool) -> BytePairEncoding:
    checks.non_negative_int("num_merges", num_merges)
    counts = Counter(pre_tokenize(text))
    if not counts:
        raise ValueError("text must contain at least one word, got only white space")
    split = BytePairEncoding((), (), (), end_of_word, byte_level).split
    words = [split(word) for word in counts]
    freqs = list(counts.values())
    used = {s for symbols in words for s in symbols}
    alphabet = sorted(used | set(BYTE_SYMBOLS) if byte_level else used)
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
    return BytePairEncoding(tuple(alphabet), tuple(merges), tuple(chosen), end_of_word, byte_level)


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
    words = {word: bpe.split(word) for word in counts}
    means, done = [], 0
    for m in merge_counts:
        for pair in bpe.merges[done:m]:  # replay the merges once, in order
            words = {word: merge_pair(symbols, pair) for word, symbols in words.items()}
        done = m
        means.append(sum(counts[w] * len(s) for w, s in words.items()) / len(sentences))
    return means
