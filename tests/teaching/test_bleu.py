"""Claims about BLEU by hand (transformer_lab.teaching.bleu): it is sacrebleu's BLEU with
white-space tokens and no smoothing, on any sentence pair."""

from __future__ import annotations

import math

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab import teaching as tt

WORDS = st.lists(st.sampled_from(["the", "cat", "sat", "on", "mat", "a", "dog"]), min_size=1, max_size=14)


def sacre(hyp: str, ref: str):
    return sacrebleu.corpus_bleu([hyp], [[ref]], smooth_method="none", tokenize="none")


@settings(max_examples=200, deadline=None)
@given(hyp=WORDS, ref=WORDS)
def test_sentence_bleu_equals_sacrebleu_without_smoothing(hyp, ref):
    hyp, ref = " ".join(hyp), " ".join(ref)
    ours, theirs = tt.sentence_bleu(hyp, ref), sacre(hyp, ref)
    assert list(ours.matches) == theirs.counts
    assert list(ours.totals) == theirs.totals
    assert (ours.hyp_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert ours.brevity_penalty == pytest.approx(theirs.bp)
    assert ours.score == pytest.approx(theirs.score, abs=1e-9)


def test_the_slide_example_clips_repeats_and_penalises_brevity():
    b = tt.sentence_bleu("the cat the cat is on the mat", "the cat is on the mat near the door")
    assert b.matches == (7, 5, 4, 3)  # "cat" and "the cat" clipped to one match each
    assert b.totals == (8, 7, 6, 5)
    assert b.brevity_penalty == pytest.approx(math.exp(1 - 9 / 8))
    assert b.score == pytest.approx(100 * math.exp(1 - 9 / 8) * 0.25**0.25)  # product of p_n = 1/4
    assert round(b.score, 1) == 62.4
    assert round(sacrebleu.sentence_bleu("the cat the cat is on the mat", ["the cat is on the mat near the door"],
                                         smooth_method="none", tokenize="none").score, 1) == 62.4


def test_no_match_of_some_order_gives_zero_and_a_longer_output_no_penalty():
    assert tt.sentence_bleu("the cat sat", "the dog sat").score == 0.0  # no bigram matches
    b = tt.sentence_bleu("a b c d e f", "a b c d e")
    assert b.brevity_penalty == 1.0 and b.score > 0


def test_sentence_bleu_names_bad_arguments():
    with pytest.raises(TypeError, match="hypothesis must be a str, got list"):
        tt.sentence_bleu(["the"], "the")
    with pytest.raises(ValueError, match="max_order must be a positive int, got 0"):
        tt.sentence_bleu("the", "the", max_order=0)
