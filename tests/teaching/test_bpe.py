"""Claims about the byte-pair encoding learner (transformer_lab.teaching.bpe): it learns
the merges Hugging Face ``tokenizers`` learns, segments words losslessly, and shortens the
text as the vocabulary grows."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from transformer_lab import teaching as tt
from transformer_lab.teaching.bpe import merge_pair


def hf_merges(text: str, num_merges: int, end_of_word: str) -> list[tuple[str, str]]:
    """Merges of tokenizers' BpeTrainer on the same words, the end-of-word mark spelled as a
    character of its own (tokenizers' suffix option numbers suffixed symbols in hash order,
    which makes its tie-breaking vary from run to run)."""
    words = [w + end_of_word for w in tt.pre_tokenize(text)]
    alphabet = set("".join(words))
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + num_merges, min_frequency=0, show_progress=False)
    tokenizer.train_from_iterator([" ".join(words)], trainer)
    return [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def random_text(seed: int) -> str:
    rng = random.Random(seed)
    letters = "abcdefg"[: rng.randint(2, 7)]
    return " ".join("".join(rng.choice(letters) for _ in range(rng.randint(1, 8))) for _ in range(rng.randint(1, 60)))


@pytest.mark.parametrize("seed", range(40))
def test_learn_bpe_learns_the_merges_of_hugging_face_tokenizers(seed):
    text = random_text(seed)
    num_merges = random.Random(seed).randint(1, 80)
    ours = tt.learn_bpe(text, num_merges, end_of_word="_").merges
    assert list(ours) == hf_merges(text, num_merges, "_")


def test_learn_bpe_learns_the_merges_of_tokenizers_on_the_deck_text():
    ours = tt.learn_bpe(tt.corpus.TEXT, 300, end_of_word="_").merges
    assert list(ours) == hf_merges(tt.corpus.TEXT, 300, "_")


def test_the_first_merge_is_the_most_frequent_pair():
    bpe = tt.learn_bpe("low low low lower newest newest", 2)
    # pairs: (l,o) 4, (o,w) 4, (w,</w>) 3, ... -> tie at 4 goes to the pair entered first: l < o
    assert bpe.merges[0] == ("l", "o") and bpe.counts[0] == 4
    assert bpe.merges[1] == ("lo", "w") and bpe.counts[1] == 4


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), num_merges=st.integers(0, 60))
def test_segments_rebuild_every_word_and_never_grow(seed, num_merges):
    text = random_text(seed)
    bpe = tt.learn_bpe(text, num_merges)
    for word in set(tt.pre_tokenize(text)):
        pieces = bpe.segment(word)
        assert "".join(pieces) == word + "</w>"
        assert len(pieces) <= len(bpe.segment(word, 0)) == len(word) + 1
        assert set(pieces) <= set(bpe.vocabulary())


def test_merge_pair_joins_left_to_right_without_overlap():
    assert merge_pair(list("aaa"), ("a", "a")) == ["aa", "a"]
    assert merge_pair(["a", "b", "a", "b"], ("a", "b")) == ["ab", "ab"]


def test_tokens_per_sentence_falls_from_characters_to_words():
    text = "the cat sat. the cat ran far."
    bpe = tt.learn_bpe(text, 100)
    means = tt.tokens_per_sentence(bpe, text, [0, 1, len(bpe.merges)])
    assert means[0] == (len("thecatsatthecatranfar") + 2 + 9) / 2  # characters, punctuation, one </w> per word
    assert means[0] > means[1] > means[2]
    assert means[2] == len(tt.pre_tokenize(text)) / 2  # every word one symbol


def test_vocabulary_grows_by_one_symbol_per_new_merge():
    bpe = tt.learn_bpe(tt.corpus.TEXT, 50)
    assert len(bpe.vocabulary(0)) == len(bpe.alphabet)
    assert len(bpe.vocabulary(50)) == len(bpe.alphabet) + 50


def test_bpe_names_bad_arguments():
    with pytest.raises(ValueError, match="num_merges must be a non-negative int, got -1"):
        tt.learn_bpe("a b", -1)
    with pytest.raises(ValueError, match="text must contain at least one word"):
        tt.learn_bpe("   ", 3)
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        tt.learn_bpe(b"a b", 3)
    bpe = tt.learn_bpe("ab ab", 1)
    with pytest.raises(ValueError, match=r"merge_counts must ascend and not exceed the 1 merges learned, got \[2\]"):
        tt.tokens_per_sentence(bpe, "ab ab.", [2])
