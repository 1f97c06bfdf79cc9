"""The generated pronoun task: only the adjective decides what "it" refers to."""

import random

import pytest

from transformer_lab import RunConfig, make_task
from transformer_lab.data import (
    ANIMAL_ADJECTIVES,
    ANIMALS,
    PLACE_ADJECTIVES,
    PLACES,
    PRONOUN_TEMPLATES,
    pronoun_example,
)


def test_the_antecedent_is_the_animal_exactly_when_the_adjective_describes_an_animal():
    rng = random.Random(0)
    for _ in range(500):
        sentence, antecedent = pronoun_example(rng)
        words = sentence.split()
        assert words.count("it") == 1 and antecedent in words
        animal = next(w for w in words if w in ANIMALS)
        place = next(w for w in words if w in PLACES)
        expected = animal if words[-1] in ANIMAL_ADJECTIVES else place
        assert words[-1] in ANIMAL_ADJECTIVES + PLACE_ADJECTIVES
        assert antecedent == expected


def test_word_lists_have_the_planned_sizes_and_no_word_in_two_roles():
    assert (len(ANIMALS), len(PLACES), len(ANIMAL_ADJECTIVES), len(PLACE_ADJECTIVES)) == (10, 10, 8, 8)
    roles = [set(ANIMALS), set(PLACES), set(ANIMAL_ADJECTIVES), set(PLACE_ADJECTIVES)]
    assert sum(map(len, roles)) == len(set().union(*roles))


# Adjectives that describe an animal and a place alike, so "because it was too <adj>" would
# have two readings: an old street, a slow stream, a weak bridge, a lazy river, a sleepy
# lane; a busy dog, a muddy pig, a long dog; a thirsty field. All but "thirsty" were once
# in these lists (a reviewer found "the cow did not cross the street because it was too
# old" ambiguous); none may come back.
FITS_BOTH = ("old", "slow", "weak", "lazy", "sleepy", "busy", "muddy", "long", "thirsty")


def test_no_adjective_fits_both_an_animal_and_a_place():
    assert not set(ANIMAL_ADJECTIVES) & set(PLACE_ADJECTIVES)
    assert not set(FITS_BOTH) & set(ANIMAL_ADJECTIVES + PLACE_ADJECTIVES)
    # the deck's two sentences: "... too tired" -> cat, "... too wide" -> road
    assert "tired" in ANIMAL_ADJECTIVES and "wide" in PLACE_ADJECTIVES


def test_the_task_has_4800_distinct_sentences():
    rng = random.Random(2)
    seen = {pronoun_example(rng) for _ in range(60_000)}
    assert len(seen) == len(ANIMALS) * len(PLACES) * 16 * len(PRONOUN_TEMPLATES) == 4800


def test_every_template_appears_and_one_names_the_place_first():
    rng = random.Random(1)
    sentences = [pronoun_example(rng)[0] for _ in range(300)]
    first_nouns = {s.split()[1] in PLACES for s in sentences}
    assert first_nouns == {True, False}
    prefixes = {t.split("{animal}")[0] if t.index("{animal}") < t.index("{place}") else "passive"
                for t in PRONOUN_TEMPLATES}
    assert len(PRONOUN_TEMPLATES) == 3 and "passive" in prefixes


def test_both_antecedents_are_about_equally_common():
    data = make_task("pronoun", seed=0, num_train=2000, num_validation=0, num_test=0)
    animals = sum(t in ANIMALS for _, t in data.train)
    assert 900 < animals < 1100


def test_the_task_is_word_level_on_both_sides_and_trainable_by_name():
    data = make_task("pronoun", seed=0, num_train=50, num_validation=10, num_test=10)
    assert data.src_vocab.tokenize == data.tgt_vocab.tokenize == "word"
    assert set(data.tgt_vocab.itos[4:]) <= set(ANIMALS + PLACES)
    assert RunConfig(task="pronoun").task == "pronoun"


def test_the_pronoun_task_takes_no_options():
    with pytest.raises(TypeError, match=r"task 'pronoun' takes options \(\), got unknown option\(s\) min_len"):
        make_task("pronoun", min_len=3)
