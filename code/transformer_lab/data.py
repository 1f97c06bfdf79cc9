"""Data: toy translation tasks generated from a seed, a tokenizer and token-budget batches.

Nothing is downloaded. Every task is a function of a ``random.Random``, so a seed fixes the
whole corpus, and held-out splits are deduplicated against training by source string.

- ``copy``, ``reverse``, ``sort``: strings of symbols, character level on both sides.
- ``dates``: a date in English words (several phrasings, e.g. "the twenty-second of
  november two thousand twenty-six" or "november twenty-two , two thousand twenty-six")
  to ISO characters "2026-11-22". Different vocabularies on the two sides and real
  reordering: the year comes last in the source and first in the target.
- ``numbers``: English number words ("four thousand three hundred twenty-one") to digits.

Batching follows Section 5.1 of Vaswani et al., 2017: "Sentence pairs were batched together
by approximate sequence length. Each training batch contained a set of sentence pairs
containing approximately 25000 source tokens and 25000 target tokens." Here a batch holds
at most ``max_tokens`` tokens *including padding* on each side,
``batch_size * max_len_in_batch <= max_tokens``, a slightly stricter budget than the
paper's count of real tokens, so a batch's memory is bounded.

Shapes: B batch, S source length, T target length (``tgt_in`` and ``tgt_out``).
"""

from __future__ import annotations

import datetime
import inspect
import random
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset, Sampler

PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
TOKENIZE_MODES = ("word", "char")

Pair = tuple[str, str]


# --------------------------------------------------------------------------- tokenizer


class Vocabulary:
    """Symbols to ids and back, with the four specials at fixed ids.

    ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2, ``<unk>`` = 3, then the symbols in sorted
    order (so the ids do not depend on the order the data came in). ``tokenize`` is
    ``"word"`` (split on whitespace, join with one space) or ``"char"`` (every character,
    spaces included, is a symbol). The paper uses shared byte-pair (English-German) or
    word-piece (English-French) vocabularies (Section 5.1); a toy task needs neither.
    """

    def __init__(self, symbols: Iterable[str] = (), tokenize: str = "word"):
        if tokenize not in TOKENIZE_MODES:
            raise ValueError(f"tokenize must be one of {TOKENIZE_MODES}, got {tokenize!r}")
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
        if tokenize not in TOKENIZE_MODES:
            raise ValueError(f"tokenize must be one of {TOKENIZE_MODES}, got {tokenize!r}")
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


def _split(text: str, tokenize: str) -> list[str]:
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return text.split() if tokenize == "word" else list(text)


# --------------------------------------------------------------------------- tasks

DIGITS_AND_LETTERS = "0123456789abcdefghijklmnopqrstuvwxyz"

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " \
    "fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_ORDINAL_ONES = "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh " \
    "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth".split()
_ORDINAL_TENS = "_ _ twentieth thirtieth".split()
MONTHS = "january february march april may june july august september october november december".split()
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()


def number_words(n: int) -> str:
    """English words for 0 <= n < 10**9 (American style, no "and"): 4321 -> "four thousand
    three hundred twenty-one". Compound tens are one hyphenated word."""
    if not isinstance(n, int) or not 0 <= n < 10**9:
        raise ValueError(f"n must be an int in [0, 10**9), got {n!r}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_ONES[hundreds]} hundred" + (f" {number_words(rest)}" if rest else "")
    for size, name in ((10**6, "million"), (1000, "thousand")):
        if n >= size:
            high, rest = divmod(n, size)
            return f"{number_words(high)} {name}" + (f" {number_words(rest)}" if rest else "")
    raise AssertionError("unreachable")


def ordinal_words(n: int) -> str:
    """English ordinal for 1 <= n <= 99: 22 -> "twenty-second"."""
    if not isinstance(n, int) or not 1 <= n <= 99:
        raise ValueError(f"n must be an int in [1, 99], got {n!r}")
    if n < 20:
        return _ORDINAL_ONES[n]
    tens, ones = divmod(n, 10)
    if ones == 0:
        return _TENS[tens][:-1] + "ieth"
    return f"{_TENS[tens]}-{_ORDINAL_ONES[ones]}"


def year_words(year: int) -> str:
    """How a year is said: 1999 -> "nineteen ninety-nine", 1905 -> "nineteen oh five",
    1900 -> "nineteen hundred", 2005 -> "two thousand five", 2026 -> "two thousand twenty-six"."""
    if not isinstance(year, int) or not 1000 <= year <= 9999:
        raise ValueError(f"year must be an int in [1000, 9999], got {year!r}")
    century, rest = divmod(year, 100)
    if century % 10 == 0:  # 2000-2099, 1000-1099: "two thousand twenty-six"
        return number_words(year)
    if rest == 0:
        return f"{number_words(century)} hundred"
    if rest < 10:
        return f"{number_words(century)} oh {number_words(rest)}"
    return f"{number_words(century)} {number_words(rest)}"


def _check_length_range(min_len: int, max_len: int) -> None:
    if not isinstance(min_len, int) or min_len < 1:
        raise ValueError(f"min_len must be a positive int, got {min_len!r}")
    if not isinstance(max_len, int) or max_len < min_len:
        raise ValueError(f"max_len must be an int >= min_len={min_len}, got {max_len!r}")


def _symbols(rng: random.Random, min_len: int, max_len: int, alphabet: str) -> str:
    _check_length_range(min_len, max_len)
    if not isinstance(alphabet, str) or len(set(alphabet)) < 2 or any(c.isspace() for c in alphabet):
        raise ValueError(f"alphabet must be a str of at least 2 distinct non-space characters, got {alphabet!r}")
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(min_len, max_len)))


def copy_example(
    rng: random.Random, min_len: int = 3, max_len: int = 12, alphabet: str = DIGITS_AND_LETTERS[:20]
) -> Pair:
    """"k3f9a" -> "k3f9a": the decoder must find, by attention, the source position to copy."""
    s = _symbols(rng, min_len, max_len, alphabet)
    return s, s


def reverse_example(
    rng: random.Random, min_len: int = 3, max_len: int = 12, alphabet: str = DIGITS_AND_LETTERS[:20]
) -> Pair:
    """"k3f9a" -> "a9f3k": the cross-attention pattern is the anti-diagonal."""
    s = _symbols(rng, min_len, max_len, alphabet)
    return s, s[::-1]


def sort_example(
    rng: random.Random, min_len: int = 3, max_len: int = 12, alphabet: str = DIGITS_AND_LETTERS[:20]
) -> Pair:
    """"k3f9a" -> "39afk" (sorted by code point): every output depends on the whole input."""
    s = _symbols(rng, min_len, max_len, alphabet)
    return s, "".join(sorted(s))


def _date_phrase(rng: random.Random, d: datetime.date) -> str:
    day_ord, day_num, month, year = ordinal_words(d.day), number_words(d.day), MONTHS[d.month - 1], year_words(d.year)
    formats = (
        f"the {day_ord} of {month} {year}",
        f"{day_ord} {month} {year}",
        f"{month} {day_num} , {year}",
        f"{month} the {day_ord} {year}",
        f"{WEEKDAYS[d.weekday()]} the {day_ord} of {month} {year}",
    )
    return rng.choice(formats)


def dates_example(rng: random.Random, min_year: int = 1950, max_year: int = 2049) -> Pair:
    """A date in English words -> ISO 8601 characters:
    "the twenty-second of november two thousand twenty-six" -> "2026-11-22".

    Five phrasings (one names the weekday, which the model must learn to ignore). Source
    words, target characters: different vocabularies, and the year moves from last to first.
    """
    if not isinstance(min_year, int) or not 1000 <= min_year <= 9999:
        raise ValueError(f"min_year must be an int in [1000, 9999], got {min_year!r}")
    if not isinstance(max_year, int) or not min_year <= max_year <= 9999:
        raise ValueError(f"max_year must be an int in [min_year={min_year}, 9999], got {max_year!r}")
    first = datetime.date(min_year, 1, 1).toordinal()
    last = datetime.date(max_year, 12, 31).toordinal()
    d = datetime.date.fromordinal(rng.randint(first, last))
    return _date_phrase(rng, d), d.isoformat()


def numbers_example(rng: random.Random, max_value: int = 9999) -> Pair:
    """English number words -> digits: "four thousand three hundred twenty-one" -> "4321".

    The value is drawn log-uniformly, so short and long numbers are equally common."""
    if not isinstance(max_value, int) or not 1 <= max_value < 10**9:
        raise ValueError(f"max_value must be an int in [1, 10**9), got {max_value!r}")
    digits = rng.randint(1, len(str(max_value)))
    n = rng.randint(0 if digits == 1 else 10 ** (digits - 1), min(10**digits - 1, max_value))
    return number_words(n), str(n)


@dataclass(frozen=True)
class TaskSpec:
    """A task: ``generate(rng, **options) -> (source, target)`` and how each side is tokenized."""

    name: str
    generate: Callable[..., Pair]
    src_tokenize: str
    tgt_tokenize: str
    description: str

    @property
    def options(self) -> tuple[str, ...]:
        """Names of the keyword options ``generate`` takes (``min_len``, ``max_year``, ...)."""
        return tuple(p for p in inspect.signature(self.generate).parameters if p != "rng")

    def check_options(self, options: Mapping) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(
                f"task {self.name!r} takes options ({', '.join(self.options)}), "
                f"got unknown option(s) {', '.join(unknown)}"
            )

    def __call__(self, rng: random.Random, **options) -> Pair:
        return self.generate(rng, **options)


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("copy", copy_example, "char", "char", "symbols -> the same symbols"),
        TaskSpec("reverse", reverse_example, "char", "char", "symbols -> the symbols reversed"),
        TaskSpec("sort", sort_example, "char", "char", "symbols -> the symbols sorted"),
        TaskSpec("dates", dates_example, "word", "char", "a date in English words -> YYYY-MM-DD"),
        TaskSpec("numbers", numbers_example, "word", "char", "English number words -> digits"),
    )
}


def get_task(name: str) -> TaskSpec:
    """The registered task ``name``; a ValueError lists the valid names otherwise."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name]


@dataclass
class TaskData:
    """Three disjoint splits of (source, target) pairs and the two vocabularies."""

    name: str
    seed: int
    train: list[Pair]
    validation: list[Pair]
    test: list[Pair]
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    options: dict = field(default_factory=dict)


def make_task(
    name: str,
    seed: int = 0,
    num_train: int = 10_000,
    num_validation: int = 500,
    num_test: int = 500,
    **options,
) -> TaskData:
    """Generate task ``name`` from ``seed``: splits that share no source string.

    Examples are drawn one after another from ``random.Random(seed)``, duplicates (by
    source) are skipped, and the unique examples are shuffled (same generator) before
    they are cut into test, validation and training splits, so that rare kinds of
    example (the ten one-digit numbers) land in each split in proportion rather than all
    in the split filled first. ``options`` go to the generator (e.g. ``min_len``,
    ``max_len`` for copy; ``min_year`` for dates).

    The vocabularies hold every symbol of all three splits: a vocabulary is the task's
    symbol inventory, and the held-out splits must be writable with it.
    """
    spec = get_task(name)
    spec.check_options(options)
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    for arg, n in (("num_train", num_train), ("num_validation", num_validation), ("num_test", num_test)):
        if not isinstance(n, int) or n < 0:
            raise ValueError(f"{arg} must be a non-negative int, got {n!r}")
    total = num_train + num_validation + num_test
    rng = random.Random(seed)
    seen: set[str] = set()
    pairs: list[Pair] = []
    misses, max_misses = 0, 100 + 10 * total
    while len(pairs) < total:
        src, tgt = spec(rng, **options)
        if src in seen:
            misses += 1
            if misses > max_misses:
                raise ValueError(
                    f"task {name!r} with options {options} has too few distinct examples for "
                    f"num_train + num_validation + num_test = {total}; found {len(pairs)}"
                )
            continue
        seen.add(src)
        pairs.append((src, tgt))
    rng.shuffle(pairs)
    test = pairs[:num_test]
    validation = pairs[num_test: num_test + num_validation]
    train = pairs[num_test + num_validation:]
    src_vocab = Vocabulary.build((s for s, _ in pairs), tokenize=spec.src_tokenize)
    tgt_vocab = Vocabulary.build((t for _, t in pairs), tokenize=spec.tgt_tokenize)
    return TaskData(name, seed, train, validation, test, src_vocab, tgt_vocab, dict(options))


# --------------------------------------------------------------------------- dataset


class Example(NamedTuple):
    src: Tensor  # (S,) source ids ending in <eos>
    tgt: Tensor  # (T + 1,) target ids framed by <bos> ... <eos>
    index: int


class TranslationDataset(Dataset):
    """Encoded (source, target) pairs. ``src`` ends with ``<eos>``; ``tgt`` is
    ``<bos> y_1 ... y_n <eos>``, which ``collate`` shifts into ``tgt_in``/``tgt_out``.

    ``src_lengths[i]`` is S and ``tgt_lengths[i]`` is T = n + 1 for example i: the lengths
    the batch sampler budgets.
    """

    def __init__(self, pairs: Sequence[Pair], src_vocab: Vocabulary, tgt_vocab: Vocabulary):
        self.pairs = list(pairs)
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.src_ids = [src_vocab.encode(s) for s, _ in self.pairs]
        self.tgt_ids = [tgt_vocab.encode(t, add_bos=True, add_eos=True) for _, t in self.pairs]
        self.src_lengths = [len(x) for x in self.src_ids]
        self.tgt_lengths = [len(y) - 1 for y in self.tgt_ids]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> Example:
        return Example(
            torch.tensor(self.src_ids[index], dtype=torch.long),
            torch.tensor(self.tgt_ids[index], dtype=torch.long),
            index,
        )


class Batch(NamedTuple):
    """A padded batch. ``tgt_in`` = ``<bos> y_1 .. y_n`` and ``tgt_out`` = ``y_1 .. y_n <eos>``:
    the output embeddings "are offset by one position" (Section 3.2.3)."""

    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T)
    src_tokens: int  # non-pad source tokens
    tgt_tokens: int  # non-pad target tokens (positions that count in the loss)
    indices: Tensor  # (B,) dataset indices, to restore the original order

    def to(self, device, non_blocking: bool = False) -> "Batch":
        move = partial(Tensor.to, device=device, non_blocking=non_blocking)
        return self._replace(
            src=move(self.src), tgt_in=move(self.tgt_in), tgt_out=move(self.tgt_out), indices=move(self.indices)
        )


def collate(examples: Sequence[Example], pad_id: int = PAD_ID) -> Batch:
    """Pad a list of ``Example`` into a ``Batch`` of (B, S) and (B, T) tensors."""
    if len(examples) == 0:
        raise ValueError("examples must be a non-empty sequence of Example")
    src = torch.nn.utils.rnn.pad_sequence([e.src for e in examples], batch_first=True, padding_value=pad_id)  # (B, S)
    tgt = torch.nn.utils.rnn.pad_sequence(
        [e.tgt for e in examples], batch_first=True, padding_value=pad_id
    )  # (B, T + 1)
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]  # (B, T), (B, T)
    # The shorter rows' <eos> sits inside tgt_in after slicing; it is followed only by
    # padding targets, so the loss never asks to predict anything after it.
    tgt_in = tgt_in.masked_fill(tgt_in == EOS_ID, pad_id)
    indices = torch.tensor([e.index for e in examples], dtype=torch.long)  # (B,)
    return Batch(
        src, tgt_in.contiguous(), tgt_out.contiguous(),
        int((src != pad_id).sum()), int((tgt_out != pad_id).sum()), indices,
    )


# --------------------------------------------------------------------------- batching


class TokenBatchSampler(Sampler[list[int]]):
    """Batches of dataset indices by token budget, bucketed by length (Section 5.1).

    Per epoch: shuffle the indices (``seed + epoch``), cut them into pools of ``pool_size``,
    sort each pool by (source length, target length), then fill batches greedily so that
    ``len(batch) * max(lengths in batch) <= max_tokens`` on the source *and* the target
    side. The batch order is shuffled too. ``pool_size=None`` sorts the whole data set
    (least padding; for evaluation); ``pool_size=1`` is random batching.

    Sharding for DistributedDataParallel: rank r of ``num_replicas`` gets batches
    r, r + R, r + 2R, ... Before that, the largest batches are split in two until the
    count divides by R, so every rank gets the same number of batches and together they
    hold every example exactly once. Only if there are fewer examples than that needs are
    batches repeated (as ``DistributedSampler`` does). Call ``set_epoch`` every epoch.
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        max_tokens: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        pool_size: int | None = 4096,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(
                f"src_lengths and tgt_lengths must have the same length, got {len(src_lengths)} and {len(tgt_lengths)}"
            )
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        longest = max([*src_lengths, *tgt_lengths], default=0)
        if longest > max_tokens:
            raise ValueError(f"max_tokens={max_tokens} is smaller than the longest sequence ({longest} tokens)")
        if pool_size is not None and (not isinstance(pool_size, int) or pool_size < 1):
            raise ValueError(f"pool_size must be a positive int or None, got {pool_size!r}")
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"num_replicas must be a positive int, got {num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be an int in [0, num_replicas={num_replicas}), got {rank!r}")
        self.src_lengths, self.tgt_lengths = list(src_lengths), list(tgt_lengths)
        self.max_tokens, self.shuffle, self.seed, self.pool_size = max_tokens, shuffle, seed, pool_size
        self.num_replicas, self.rank = num_replicas, rank
        self.epoch = 0
        self._cache: tuple[int, list[list[int]]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """A different shuffle per epoch, identical on every rank."""
        self.epoch = epoch

    def _fits(self, size: int, max_src: int, max_tgt: int) -> bool:
        return size * max_src <= self.max_tokens and size * max_tgt <= self.max_tokens

    def all_batches(self) -> list[list[int]]:
        """This epoch's batches for every rank, before sharding."""
        if self._cache is not None and self._cache[0] == self.epoch:
            return self._cache[1]
        n = len(self.src_lengths)
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = torch.randperm(n, generator=g).tolist() if self.shuffle else list(range(n))
        pool = self.pool_size or max(n, 1)
        key = lambda i: (self.src_lengths[i], self.tgt_lengths[i])  # noqa: E731
        order = [i for start in range(0, n, pool) for i in sorted(order[start: start + pool], key=key)]
        batches: list[list[int]] = []
        batch: list[int] = []
        max_src = max_tgt = 0
        for i in order:
            s, t = max(max_src, self.src_lengths[i]), max(max_tgt, self.tgt_lengths[i])
            if batch and not self._fits(len(batch) + 1, s, t):
                batches.append(batch)
                batch, s, t = [], self.src_lengths[i], self.tgt_lengths[i]
            batch.append(i)
            max_src, max_tgt = s, t
        if batch:
            batches.append(batch)
        batches = self._make_divisible(batches)
        if self.shuffle:
            perm = torch.randperm(len(batches), generator=g).tolist()
            batches = [batches[p] for p in perm]
        self._cache = (self.epoch, batches)
        return batches

    def _make_divisible(self, batches: list[list[int]]) -> list[list[int]]:
        r = self.num_replicas
        while len(batches) % r:
            largest = max(range(len(batches)), key=lambda b: len(batches[b]), default=None)
            if largest is None or len(batches[largest]) < 2:
                break
            b = batches.pop(largest)
            batches[largest:largest] = [b[: len(b) // 2], b[len(b) // 2:]]
        if batches and len(batches) % r:  # fewer examples than ranks need: repeat
            batches += batches[: r - len(batches) % r]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.all_batches()[self.rank:: self.num_replicas])

    def __len__(self) -> int:
        return len(self.all_batches()) // self.num_replicas


def padding_fraction(batches: Iterable[Sequence[int]], lengths: Sequence[int]) -> float:
    """Share of the padded tensor that is padding: 1 - sum(lengths) / sum(B * max length)."""
    real = padded = 0
    for batch in batches:
        ls = [lengths[i] for i in batch]
        real += sum(ls)
        padded += len(ls) * max(ls)
    return 1.0 - real / padded if padded else 0.0


class Loaders(NamedTuple):
    train: DataLoader
    validation: DataLoader
    test: DataLoader
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    data: TaskData


def make_loaders(
    task: str | TaskData,
    seed: int = 0,
    max_tokens: int = 2048,
    *,
    num_train: int = 10_000,
    num_validation: int = 500,
    num_test: int = 500,
    pool_size: int | None = 4096,
    num_replicas: int = 1,
    rank: int = 0,
    num_workers: int = 0,
    **options,
) -> Loaders:
    """Train, validation and test ``DataLoader`` of ``Batch`` for a task name (or ready
    ``TaskData``), with the vocabularies.

    Training batches are bucketed, shuffled per epoch (call
    ``loaders.train.batch_sampler.set_epoch(epoch)``) and sharded over ``num_replicas``;
    evaluation batches are sorted by length, in a fixed order, unsharded (every rank sees
    the whole held-out split). ``options`` go to ``make_task``.
    """
    data = task if isinstance(task, TaskData) else make_task(
        task, seed, num_train=num_train, num_validation=num_validation, num_test=num_test, **options
    )

    def loader(pairs: list[Pair], train: bool) -> DataLoader:
        ds = TranslationDataset(pairs, data.src_vocab, data.tgt_vocab)
        sampler = TokenBatchSampler(
            ds.src_lengths, ds.tgt_lengths, max_tokens, shuffle=train, seed=seed,
            pool_size=pool_size if train else None,
            num_replicas=num_replicas if train else 1, rank=rank if train else 0,
        )
        return DataLoader(ds, batch_sampler=sampler, collate_fn=collate, num_workers=num_workers)

    return Loaders(
        loader(data.train, True), loader(data.validation, False), loader(data.test, False),
        data.src_vocab, data.tgt_vocab, data,
    )
