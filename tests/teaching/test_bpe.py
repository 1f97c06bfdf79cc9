"""Claims about the byte-pair encoding learner (transformer_lab.teaching.bpe): it learns
the merges Hugging Face ``tokenizers`` learns, segments words losslessly, and shortens the
text as the vocabulary grows."""

from __future__ import annotations

import functools
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


# ------------------------------------------------------------------ byte-level BPE (GPT-2)
def hf_byte_merges(text: str, num_merges: int, end_of_word: str) -> list[tuple[str, str]]:
    """tokenizers' BpeTrainer on the same words written as byte symbols, its initial
    alphabet all 256 of them (and the end-of-word mark), as byte-level BPE starts."""
    words = ["".join(tt.byte_symbols(w)) + end_of_word for w in tt.pre_tokenize(text)]
    alphabet = sorted(set(tt.BYTE_SYMBOLS) | {end_of_word})
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + num_merges, min_frequency=0, show_progress=False,
                                  initial_alphabet=alphabet)
    tokenizer.train_from_iterator([" ".join(words)], trainer)
    return [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def test_byte_symbols_are_gpt2s_byte_map_as_tokenizers_writes_it():
    assert len(set(tt.BYTE_SYMBOLS)) == 256
    assert set(tt.BYTE_SYMBOLS) == set(pre_tokenizers.ByteLevel.alphabet())
    assert not any(s.isspace() or not s.isprintable() for s in tt.BYTE_SYMBOLS)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for word in ("jazz", "naïve", "zürich", "日本", "a\tb", "🙂"):
        assert "".join(tt.byte_symbols(word)) == byte_level.pre_tokenize_str(word)[0][0]
        assert b"".join(tt.symbol_bytes(s) for s in tt.byte_symbols(word)) == word.encode("utf-8")


@pytest.mark.parametrize("seed", range(25))
def test_learn_byte_bpe_learns_the_merges_of_tokenizers_over_the_256_bytes(seed):
    rng = random.Random(seed)
    letters = "aéb日ñc"[: rng.randint(2, 6)]   # one, two and three bytes per character
    text = " ".join("".join(rng.choice(letters) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 50)))
    num_merges = rng.randint(1, 60)
    assert list(tt.learn_byte_bpe(text, num_merges, end_of_word="→").merges) == hf_byte_merges(text, num_merges, "→")


def test_on_an_ascii_text_byte_level_learns_the_character_merges_over_a_larger_alphabet():
    chars, byte_level = tt.learn_bpe(tt.corpus.TEXT, 1000), tt.learn_byte_bpe(tt.corpus.TEXT, 1000)
    assert chars.merges == byte_level.merges and chars.counts == byte_level.counts
    assert len(byte_level.alphabet) == 257 and len(chars.alphabet) < 40


def test_a_word_with_a_character_the_text_never_uses_is_known_to_byte_level_only():
    chars, byte_level = tt.learn_bpe(tt.corpus.TEXT, 1000), tt.learn_byte_bpe(tt.corpus.TEXT, 1000)
    assert chars.segment("jazz") == ["j", "a", "z", "z", "</w>"] == byte_level.segment("jazz")
    assert {"j", "z"} - set(chars.vocabulary()) == {"j", "z"}
    assert set(byte_level.segment("jazz")) <= set(byte_level.vocabulary())
    assert [byte_level.show(s) for s in byte_level.segment("naïve")] == ["n", "a", "\\xc3", "\\xaf", "ve</w>"]


@settings(max_examples=60, deadline=None)
@given(word=st.text(min_size=1, max_size=12))
def test_byte_level_segments_any_word_into_vocabulary_symbols_losslessly(word):
    bpe = _deck_byte_bpe()
    pieces = bpe.segment(word)
    assert set(pieces) <= set(bpe.vocabulary())
    assert pieces[-1].endswith("</w>")
    assert b"".join(tt.symbol_bytes(p.removesuffix("</w>")) for p in pieces) == word.encode("utf-8")


@functools.lru_cache(maxsize=1)
def _deck_byte_bpe():
    return tt.learn_byte_bpe(tt.corpus.TEXT, 200)


def test_byte_level_names_bad_arguments():
    with pytest.raises(ValueError, match="end_of_word must be a non-empty str that is not a byte symbol"):
        tt.learn_byte_bpe("a b", 3, end_of_word="_")
    with pytest.raises(ValueError, match="symbol must be made of byte symbols"):
        tt.symbol_bytes("a→")
    with pytest.raises(TypeError, match="word must be a str, got bytes"):
        tt.byte_symbols(b"jazz")
