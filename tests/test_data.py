"""Claims about transformer_lab.data: generated tasks, the vocabulary, token-budget batches."""

from __future__ import annotations

import random
import warnings
from collections import Counter

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.data import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    TASKS,
    UNK_ID,
    Batch,
    TokenBatchSampler,
    TranslationDataset,
    Vocabulary,
    collate,
    get_task,
    make_loaders,
    make_task,
    number_words,
    ordinal_words,
    padding_fraction,
    year_words,
)

SMALL = dict(num_train=600, num_validation=100, num_test=100)


# --------------------------------------------------------------------------- tasks


@pytest.mark.parametrize("name", sorted(TASKS))
def test_the_same_seed_generates_the_same_splits(name):
    a, b = make_task(name, seed=3, **SMALL), make_task(name, seed=3, **SMALL)
    assert (a.train, a.validation, a.test) == (b.train, b.validation, b.test)
    assert a.src_vocab == b.src_vocab and a.tgt_vocab == b.tgt_vocab


@pytest.mark.parametrize("name", sorted(TASKS))
def test_a_different_seed_generates_different_data(name):
    assert make_task(name, seed=0, **SMALL).train != make_task(name, seed=1, **SMALL).train


@pytest.mark.parametrize("name", sorted(TASKS))
def test_splits_have_the_requested_sizes_and_share_no_source(name):
    data = make_task(name, seed=0, **SMALL)
    assert (len(data.train), len(data.validation), len(data.test)) == (600, 100, 100)
    train, val, test = ({s for s, _ in split} for split in (data.train, data.validation, data.test))
    assert len(train) == 600 and len(val) == 100 and len(test) == 100  # no duplicates within
    assert not train & val and not train & test and not val & test


def test_copy_reverse_and_sort_targets_follow_their_rule():
    rng = random.Random(0)
    for _ in range(50):
        s, t = TASKS["copy"](rng, min_len=2, max_len=5)
        assert t == s and 2 <= len(s) <= 5
        s, t = TASKS["reverse"](rng)
        assert t == s[::-1]
        s, t = TASKS["sort"](rng)
        assert t == "".join(sorted(s))


def test_dates_map_english_words_to_iso_dates_with_the_year_moved_first():
    rng = random.Random(0)
    for _ in range(200):
        src, tgt = TASKS["dates"](rng, min_year=1990, max_year=2030)
        year, month, day = (int(x) for x in tgt.split("-"))
        assert 1990 <= year <= 2030 and len(tgt) == 10
        assert src.split()[-1] == year_words(year).split()[-1]  # the year is said last
        assert ordinal_words(day) in src.split() or number_words(day) in src.split()


def test_number_and_year_words_match_hand_written_examples():
    assert number_words(0) == "zero"
    assert number_words(4321) == "four thousand three hundred twenty-one"
    assert number_words(1_000_017) == "one million seventeen"
    assert ordinal_words(22) == "twenty-second" and ordinal_words(30) == "thirtieth"
    assert year_words(2026) == "two thousand twenty-six"
    assert year_words(1999) == "nineteen ninety-nine"
    assert year_words(1905) == "nineteen oh five"
    assert year_words(1900) == "nineteen hundred"


def test_numbers_targets_are_the_digits_of_the_words():
    words_to_value = {number_words(n): n for n in range(10_000)}
    for src, tgt in make_task("numbers", seed=0, **SMALL).train:
        assert words_to_value[src] == int(tgt)


def test_dates_use_word_sources_and_character_targets():
    data = make_task("dates", seed=0, **SMALL)
    assert data.src_vocab.tokenize == "word" and data.tgt_vocab.tokenize == "char"
    assert "november" in data.src_vocab and "-" in data.tgt_vocab
    assert set(data.tgt_vocab.itos[4:]) == set("0123456789-")


def test_an_unknown_task_name_lists_the_valid_ones():
    valid = r"task must be one of \('copy', 'reverse', 'sort', 'dates', 'numbers', 'pronoun'\), got 'french'"
    with pytest.raises(ValueError, match=valid):
        get_task("french")
    with pytest.raises(ValueError, match=valid):
        make_task("french")


def test_a_task_too_small_for_the_requested_splits_is_a_clear_error():
    with pytest.raises(ValueError, match="too few distinct examples"):
        make_task("copy", num_train=100, num_validation=0, num_test=0, min_len=1, max_len=1, alphabet="ab")


def test_an_option_the_task_does_not_take_is_a_type_error_listing_the_valid_ones():
    expected = r"task 'dates' takes options \(min_year, max_year\), got unknown option\(s\) min_len"
    with pytest.raises(TypeError, match=expected):
        make_task("dates", min_len=3)


def test_generator_options_are_validated_by_name():
    with pytest.raises(ValueError, match=r"max_len must be an int >= min_len=5, got 3"):
        make_task("copy", min_len=5, max_len=3)
    with pytest.raises(ValueError, match="num_train must be a non-negative int, got -1"):
        make_task("copy", num_train=-1)


# --------------------------------------------------------------------------- vocabulary


def test_specials_have_fixed_ids():
    vocab = Vocabulary(["b", "a"], tokenize="char")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert vocab.itos == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b"]
    assert len(vocab) == 6


def test_encode_frames_with_bos_and_eos_on_request():
    vocab = Vocabulary.build(["the first of may"], tokenize="word")
    ids = vocab.encode("the first of may", add_bos=True, add_eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID and len(ids) == 6
    assert vocab.encode("may", add_eos=False) == [vocab.stoi["may"]]


def test_decode_stops_at_eos_and_drops_padding_unless_asked_to_keep_specials():
    vocab = Vocabulary.build(["abc"], tokenize="char")
    ids = [BOS_ID, *vocab.encode("ab"), vocab.stoi["c"], PAD_ID]
    assert vocab.decode(ids) == "ab"
    assert vocab.decode(torch.tensor(ids)) == "ab"
    assert vocab.decode(ids, strip_special=False) == "<bos>ab<eos>c<pad>"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["one", "two", "of", "may", "twenty-second", ","]), max_size=12))
def test_word_encode_decode_round_trips(words):
    vocab = Vocabulary(["one", "two", "of", "may", "twenty-second", ","], tokenize="word")
    text = " ".join(words)
    assert vocab.decode(vocab.encode(text, add_bos=True)) == text


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="0123456789- ", max_size=20))
def test_char_encode_decode_round_trips_including_spaces(text):
    vocab = Vocabulary("0123456789- ", tokenize="char")
    assert vocab.decode(vocab.encode(text)) == text


def test_unknown_symbols_map_to_unk_with_one_warning_naming_them():
    vocab = Vocabulary("abc", tokenize="char")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = vocab.encode("axbyx")
    assert ids == [vocab.stoi["a"], UNK_ID, vocab.stoi["b"], UNK_ID, UNK_ID, EOS_ID]
    assert len(caught) == 1
    assert "'x', 'y'" in str(caught[0].message)


def test_known_text_encodes_without_warning():
    vocab = Vocabulary("abc", tokenize="char")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vocab.encode("abc")


def test_vocabulary_survives_a_checkpoint_round_trip():
    vocab = make_task("dates", seed=0, **SMALL).src_vocab
    restored = Vocabulary.from_dict(vocab.to_dict())
    assert restored == vocab and restored.stoi == vocab.stoi and restored.tokenize == "word"


def test_vocabulary_rejects_bad_input_naming_the_argument():
    with pytest.raises(ValueError, match=r"tokenize must be one of \('word', 'char'\), got 'bpe'"):
        Vocabulary(tokenize="bpe")
    with pytest.raises(ValueError, match="state\\['itos'\\] must start with the specials"):
        Vocabulary.from_dict({"tokenize": "char", "itos": ["a", "b"]})
    with pytest.raises(TypeError, match="text must be a str, got list"):
        Vocabulary("ab", tokenize="char").encode(["a"])
    with pytest.raises(ValueError, match=r"ids must be in \[0, 6\) for this vocabulary, got 9"):
        Vocabulary("ab", tokenize="char").decode([9])


# --------------------------------------------------------------------------- batching


@pytest.fixture(scope="module")
def copy_dataset():
    data = make_task("copy", seed=0, num_train=3000, num_validation=0, num_test=0, min_len=1, max_len=30)
    return TranslationDataset(data.train, data.src_vocab, data.tgt_vocab)


def test_collate_offsets_the_target_by_one_position():
    vocab = Vocabulary("abcde", tokenize="char")
    ds = TranslationDataset([("abc", "abc"), ("de", "de"), ("abcde", "abcde")], vocab, vocab)
    batch = collate([ds[0], ds[1], ds[2]])
    assert isinstance(batch, Batch)
    assert batch.src.shape == (3, 6) and batch.tgt_in.shape == (3, 6) and batch.tgt_out.shape == (3, 6)
    assert (batch.tgt_in[:, 0] == BOS_ID).all()
    real = batch.tgt_out[:, 1:] != PAD_ID
    assert torch.equal(batch.tgt_in[:, 1:][real], batch.tgt_out[:, :-1][real])  # tgt_in[t + 1] == tgt_out[t]
    assert batch.tgt_out[1].tolist() == [*vocab.encode("de", add_eos=True), PAD_ID, PAD_ID, PAD_ID]
    assert batch.src[1, -3:].tolist() == [PAD_ID] * 3
    # tgt_in and tgt_out pad the same positions, so one padding mask serves both
    assert torch.equal(batch.tgt_in != PAD_ID, batch.tgt_out != PAD_ID)
    assert batch.src_tokens == 4 + 3 + 6 and batch.tgt_tokens == 4 + 3 + 6
    assert batch.indices.tolist() == [0, 1, 2]


def test_every_batch_respects_the_token_budget_on_both_sides(copy_dataset):
    ds = copy_dataset
    sampler = TokenBatchSampler(ds.src_lengths, ds.tgt_lengths, max_tokens=200, seed=0)
    for indices in sampler:
        batch = collate([ds[i] for i in indices])
        assert batch.src.numel() <= 200 and batch.tgt_out.numel() <= 200


def test_every_example_appears_exactly_once_per_epoch(copy_dataset):
    ds = copy_dataset
    sampler = TokenBatchSampler(ds.src_lengths, ds.tgt_lengths, max_tokens=300, seed=0, pool_size=500)
    for epoch in (0, 1):
        sampler.set_epoch(epoch)
        seen = Counter(i for batch in sampler for i in batch)
        assert sorted(seen) == list(range(len(ds))) and set(seen.values()) == {1}
        assert len(sampler) == len(list(sampler))


def test_batches_are_shuffled_reproducibly_and_differently_per_epoch(copy_dataset):
    ds = copy_dataset
    make = lambda: TokenBatchSampler(ds.src_lengths, ds.tgt_lengths, max_tokens=300, seed=7)  # noqa: E731
    a, b = make(), make()
    assert list(a) == list(b)
    first = list(a)
    a.set_epoch(1)
    assert list(a) != first


def test_bucketing_by_length_cuts_padding_against_random_batching(copy_dataset):
    ds = copy_dataset
    lengths = ds.src_lengths
    bucketed = TokenBatchSampler(ds.src_lengths, ds.tgt_lengths, max_tokens=400, pool_size=1000).all_batches()
    randomly = TokenBatchSampler(ds.src_lengths, ds.tgt_lengths, max_tokens=400, pool_size=1).all_batches()
    bucketed_padding, random_padding = padding_fraction(bucketed, lengths), padding_fraction(randomly, lengths)
    # Lengths uniform in 2..31: random batches are about 45% padding, bucketed ones under 5%.
    assert random_padding > 0.3
    assert bucketed_padding < 0.05
    assert len(bucketed) < len(randomly)  # so fewer, fuller batches per epoch


@pytest.mark.parametrize("num_replicas", [2, 3, 4])
def test_shards_are_disjoint_equal_and_cover_the_data(copy_dataset, num_replicas):
    ds = copy_dataset
    shards = []
    for rank in range(num_replicas):
        sampler = TokenBatchSampler(
            ds.src_lengths, ds.tgt_lengths, max_tokens=250, seed=1, num_replicas=num_replicas, rank=rank
        )
        sampler.set_epoch(2)
        shards.append([i for batch in sampler for i in batch])
        assert len(sampler) == len(list(sampler))
    assert len({len(list(TokenBatchSampler(ds.src_lengths, ds.tgt_lengths, 250, seed=1, num_replicas=num_replicas,
                                           rank=r))) for r in range(num_replicas)}) == 1
    every = [i for shard in shards for i in shard]
    assert sorted(every) == list(range(len(ds)))  # disjoint and covering


def test_a_budget_below_the_longest_sequence_is_a_clear_error():
    with pytest.raises(ValueError, match=r"max_tokens=4 is smaller than the longest sequence \(7 tokens\)"):
        TokenBatchSampler([3, 7], [2, 5], max_tokens=4)
    with pytest.raises(ValueError, match=r"rank must be an int in \[0, num_replicas=2\), got 2"):
        TokenBatchSampler([3], [3], max_tokens=10, num_replicas=2, rank=2)


def test_make_loaders_yields_batches_that_decode_back_to_the_task():
    loaders = make_loaders("dates", seed=0, max_tokens=512, num_train=400, num_validation=50, num_test=50)
    batch = next(iter(loaders.train))
    assert batch.src.numel() <= 512 and batch.tgt_out.numel() <= 512
    data = loaders.data
    i = int(batch.indices[0])
    assert loaders.src_vocab.decode(batch.src[0]) == data.train[i][0]
    assert loaders.tgt_vocab.decode(batch.tgt_out[0]) == data.train[i][1]
    seen = sorted(int(i) for b in loaders.test for i in b.indices)
    assert seen == list(range(50))
