"""The tokenizer: symbols to ids and back, with four special tokens at fixed ids.

The paper uses shared byte-pair (English-German) or word-piece (English-French)
vocabularies (Section 5.1 of Vaswani et al., 2017); a toy task needs neither: its symbols
are whitespace-separated words or single characters.
"""

from __future__ import annotations

import unicodedata
import warnings
from typing import Iterable, Sequence

from torch import Tensor

from .. import checks

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
TOKENIZE_MODES = ("word", "char")


class Vocabulary:
    """Symbols to ids and back, with the four specials at fixed ids.

    ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3, then the symbols in sorted
    order (so the ids do not depend on the order the data came in). ``tokenize`` is
    ``"word"`` (split on whitespace, join with one space) or ``"char"`` (every character,
    spaces included, is a symbol). The paper uses shared byte-pair (English-German) or
    word-piece (English-French) vocabularies (Section 5.1); a toy task needs neither.
    """

    def __init__(self, symbols: Iterable[str] = (), tokenize: str = "word"):
        checks.one_of("tokenize", tokenize, TOKENIZE_MODES)
        self.tokenize = tokenize
        symbols = list(symbols)
        for s in symbols:
            if not isinstance(s, str) or not s:
                raise ValueError(f"symbols must be non-empty strings, got {s!r}")
            if tokenize == "char" and len(s) != 1:
                raise ValueError(f"symbols of a char vocabulary must be single characters, got {s!r}")
            if tokenize == "word" and s.split() != [s]:
                raise ValueError(f"symbols of a word vocabulary must not contain whitespace, got {s!r}")
        extra = sorted(set(symbols) - set(SPECIALS))
        self.itos: list[str] = list(SPECIALS) + extra
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(self.itos)}

    @classmethod
    def build(cls, texts: Iterable[str], tokenize: str = "word") -> "Vocabulary":
        """The vocabulary of every symbol that occurs in ``texts``."""
        checks.one_of("tokenize", tokenize, TOKENIZE_MODES)
        symbols: set[str] = set()
        for text in texts:
            symbols.update(_split(text, tokenize))
        return cls(symbols, tokenize=tokenize)

    def tokens(self, text: str) -> list[str]:
        """``text`` cut into symbols: whitespace-separated words, or characters."""
        return _split(text, self.tokenize)

    def join(self, tokens: Sequence[str]) -> str:
        return (" " if self.tokenize == "word" else "").join(tokens)

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = True) -> list[int]:
        """Ids of ``text``'s symbols, optionally framed by ``<bos>`` and ``<eos>``.

        Unknown symbols map to ``<unk>``; one warning per call names them all.
        """
        symbols = self.tokens(text)
        ids = [self.stoi.get(s, UNK_ID) for s in symbols]
        unknown = sorted({s for s, i in zip(symbols, ids) if i == UNK_ID and s != UNK})
        if unknown:
            warnings.warn(
                f"{len(unknown)} symbol(s) not in the {self.tokenize} vocabulary map to {UNK}: "
                + ", ".join(repr(s) for s in unknown),
                stacklevel=2,
            )
        return [BOS_ID] * add_bos + ids + [EOS_ID] * add_eos

    def decode(self, ids: Sequence[int] | Tensor, strip_special: bool = True) -> str:
        """Text of ``ids``. With ``strip_special`` it stops at the first ``<eos>`` and drops
        ``<pad>`` and ``<bos>`` (``<unk>`` stays visible); without, every id is written."""
        if isinstance(ids, Tensor):
            if ids.dim() != 1:
                raise ValueError(f"ids must be a 1-D sequence of token ids, got a tensor of shape {tuple(ids.shape)}")
            ids = ids.tolist()
        out = []
        for i in ids:
            if not isinstance(i, int) or isinstance(i, bool):
                raise TypeError(f"ids must hold ints, got {type(i).__name__} {i!r}")
            if not 0 <= i < len(self.itos):
                raise ValueError(f"ids must be in [0, {len(self.itos)}) for this vocabulary, got {i}")
            if strip_special:
                if i == EOS_ID:
                    break
                if i in (PAD_ID, BOS_ID):
                    continue
            out.append(self.itos[i])
        return self.join(out)

    def to_dict(self) -> dict:
        """A JSON-friendly description for checkpoints; ``from_dict`` inverts it."""
        return {"tokenize": self.tokenize, "itos": list(self.itos)}

    @classmethod
    def from_dict(cls, state: dict) -> "Vocabulary":
        if not isinstance(state, dict) or not {"tokenize", "itos"} <= set(state):
            raise ValueError(f"state must be a dict with keys 'tokenize' and 'itos', got {state!r:.80}")
        itos = list(state["itos"])
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"state['itos'] must start with the specials {SPECIALS}, got {tuple(itos[:4])}")
        vocab = cls(itos[len(SPECIALS):], tokenize=state["tokenize"])
        if vocab.itos != itos:  # ids must survive the round trip exactly
            raise ValueError("state['itos'] must list unique symbols after the specials, in sorted order")
        return vocab

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, symbol: object) -> bool:
        return symbol in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, tokenize={self.tokenize!r})"


def normalise_text(text: str, vocab: "Vocabulary | None" = None) -> str:
    """A user's text as the tasks spell their sources: lower case ("The Fourth of JULY"
    -> "the fourth of july"). Every task's source symbols are lower case, so a capital
    would only become ``<unk>``. With ``vocab``, punctuation (Unicode category P) is
    read as the vocabulary reads it: a mark that is a symbol of a word vocabulary (the
    dates' ",") is split off as a word ("third," -> "third , "); a mark inside its symbols
    (the hyphen of "twenty-two") stays; any other mark is dropped (a space in a word
    vocabulary: "road," -> "road "). The explorer (``teaching/explorer.js``) applies the
    same rules to what is typed into it, and the translate command line to its texts
    (with the checkpoint's source vocabulary). Without ``vocab``: lower case only."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    text = text.lower()
    if vocab is None:
        return text
    if not isinstance(vocab, Vocabulary):
        raise TypeError(f"vocab must be a Vocabulary or None, got {type(vocab).__name__}")
    word = vocab.tokenize == "word"
    symbols = vocab.itos[len(SPECIALS):]
    inside = set("".join(s for s in symbols if len(s) > 1))
    out = []
    for c in text:
        if not unicodedata.category(c).startswith("P") or (c in inside) or (not word and c in vocab.stoi):
            out.append(c)
        elif word and c in vocab.stoi:
            out.append(f" {c} ")
        else:
            out.append(" " if word else "")
    return "".join(out)


def _split(text: str, tokenize: str) -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text.split() if tokenize == "word" else list(text)

