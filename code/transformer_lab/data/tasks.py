"""Toy translation tasks generated from a seed: nothing is downloaded.

Every task is a function of a ``random.Random``, so a seed fixes the whole corpus, and
held-out splits are deduplicated against training by source string.

- ``copy``, ``reverse``, ``sort``: strings of symbols, character level on both sides.
- ``dates``: a date in English words (several phrasings, e.g. "the twenty-second of
  november two thousand twenty-six" or "november twenty-two , two thousand twenty-six")
  to ISO characters "2026-11-22". Different vocabularies on the two sides and real
  reordering: the year comes last in the source and first in the target.
- ``numbers``: English number words ("four thousand three hundred twenty-one") to digits.
- ``pronoun``: "the cat did not cross the road because it was too tired" -> "cat": the
  adjective decides what "it" refers to, so the encoder must relate "it" to a noun.
"""

from __future__ import annotations

import datetime
import inspect
import random
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .. import checks
from .vocabulary import Vocabulary

Pair = tuple[str, str]

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
    checks.positive_int("min_len", min_len)
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


ANIMALS = ("cat", "dog", "horse", "cow", "goat", "sheep", "fox", "rabbit", "donkey", "pig")
PLACES = ("street", "road", "river", "bridge", "field", "yard", "square", "stream", "lane", "valley")
#: Adjectives that fit only the animal ("too tired") and only the place ("too wide"), for
#: every animal and every place above, so the sentence has one reading. The animal
#: adjectives name a feeling or a state of the body, which only a living being has ("the
#: road was too hungry" is odd); the place adjectives name a shape, a surface or what
#: covers or fills a place, which no animal has ("the goat was too rocky" is odd). Left
#: out because they fit both: old, slow, weak, lazy, sleepy, thirsty (an old street, a
#: slow stream, a weak bridge, a lazy river, a sleepy lane, a thirsty field) and busy,
#: muddy, long (a busy dog, a muddy pig, a long dog).
ANIMAL_ADJECTIVES = ("tired", "scared", "afraid", "frightened", "nervous", "hungry", "sick", "shy")
PLACE_ADJECTIVES = ("wide", "deep", "steep", "icy", "crowded", "flooded", "narrow", "rocky")
PRONOUN_TEMPLATES = (
    "the {animal} did not cross the {place} because it was too {adj}",
    "the {animal} would not cross the {place} because it was too {adj}",
    "the {place} was not crossed by the {animal} because it was too {adj}",
)


def pronoun_example(rng: random.Random) -> Pair:
    """A sentence whose "it" refers to the animal or to the place, and that noun:
    "the cat did not cross the road because it was too tired" -> "cat",
    "the cat did not cross the road because it was too wide" -> "road".

    Only the adjective decides: each animal adjective fits only an animal and each place
    adjective only a place (``ANIMAL_ADJECTIVES``, ``PLACE_ADJECTIVES``), and one template
    names the place first, so neither the word order nor the position of a noun gives the
    answer. The example made famous by Google's 2017 blog post on the Transformer; the
    paper's Figure 4 shows two heads "apparently involved in anaphora resolution". Ten
    animals, ten places, eight adjectives of each kind, three templates: 10 x 10 x 16 x 3 =
    4,800 distinct sentences.
    """
    animal, place = rng.choice(ANIMALS), rng.choice(PLACES)
    refers_to_animal = rng.random() < 0.5
    adj = rng.choice(ANIMAL_ADJECTIVES if refers_to_animal else PLACE_ADJECTIVES)
    sentence = rng.choice(PRONOUN_TEMPLATES).format(animal=animal, place=place, adj=adj)
    return sentence, animal if refers_to_animal else place


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
        TaskSpec("pronoun", pronoun_example, "word", "word", "a sentence -> the noun its \"it\" refers to"),
    )
}


def get_task(name: str) -> TaskSpec:
    """The registered task ``name``; a ValueError lists the valid names otherwise."""
    return TASKS[checks.one_of("task", name, TASKS)]


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
        checks.non_negative_int(arg, n)
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

