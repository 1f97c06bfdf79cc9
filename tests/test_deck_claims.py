"""Claims that slides state in words, checked here (fix 7 of issue 12): parameter and
operation counts of chapters 08, 09 and 18. The paper's own numbers are cited on the slides
and tested as data in tests/teaching/test_paper.py; timings are benchmarks, not tests."""

from __future__ import annotations

import pytest

import transformer_lab as tl


@pytest.mark.parametrize("heads", [1, 8, 16])
def test_multi_head_parameters_do_not_depend_on_the_number_of_heads(heads):
    """ch02 'What do more heads cost?': four 512 x 512 projections plus biases."""
    mha = tl.MultiHeadAttention(d_model=512, num_heads=heads)
    assert tl.count_parameters(mha) == 4 * 512 * 512 + 4 * 512


def test_base_feed_forward_is_two_thirds_of_an_encoder_layer():
    """ch09: about 2.1M parameters per FFN, about 1M per attention, two thirds FFN."""
    ffn = tl.count_parameters(tl.PositionwiseFeedForward(d_model=512, d_ff=2048))
    attention = tl.count_parameters(tl.MultiHeadAttention(d_model=512, num_heads=8))
    layer = tl.count_parameters(tl.Encoder(1, 512, 8, 2048))
    assert round(ffn / 1e6, 1) == 2.1 and round(attention / 1e6, 1) == 1.1
    assert ffn / layer == pytest.approx(2 / 3, abs=0.01)


def test_feed_forward_is_equation_2_by_default():
    """ch09: the module's hidden dropout defaults to 0, so it is equation (2) exactly."""
    ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=20).train()
    assert ffn.dropout.p == 0.0
    config = tl.TransformerConfig.base(100)
    assert (config.dropout, config.attention_dropout, config.activation_dropout) == (0.1, 0.0, 0.0)


def test_families_count_parameters_the_same_way():
    """ch18: with and without embedding tables, counted alike for the three families."""
    d, h, f, n, vocab = 256, 4, 1024, 4, 8000
    one_stack = tl.count_parameters(tl.Encoder(n, d, h, f))
    seq2seq = tl.Transformer(tl.TransformerConfig(vocab, vocab, d_model=d, num_heads=h, d_ff=f, num_layers=n))
    stacks = tl.count_parameters(seq2seq.encoder) + tl.count_parameters(seq2seq.decoder)
    assert stacks == one_stack + tl.count_parameters(seq2seq.decoder)
    assert tl.count_parameters(seq2seq.decoder) > one_stack  # cross-attention in every layer
    # The full model adds a source table, a target table tied to the output, and the output bias.
    assert tl.count_parameters(seq2seq) == stacks + 2 * vocab * d + vocab


@pytest.mark.parametrize("text, roles", [
    ("the twenty-second of november two thousand twenty-six", {1: "day", 3: "month", 4: "year", 5: "year", 6: "year"}),
    ("twenty-second november two thousand twenty-six", {0: "day", 1: "month", 2: "year", 3: "year", 4: "year"}),
    ("november twenty-two , two thousand twenty-six", {1: "day", 0: "month", 3: "year", 4: "year", 5: "year"}),
    ("november the twenty-second two thousand twenty-six", {2: "day", 0: "month", 3: "year", 4: "year", 5: "year"}),
    ("sunday the twenty-second of november two thousand twenty-six",
     {2: "day", 4: "month", 5: "year", 6: "year", 7: "year"}),
])
def test_the_words_of_each_part_of_a_date_are_found_in_every_wording(text, roles):
    """The cross-attention slide counts rows reading 'the matching words' (cross-attention-aligns)."""
    from transformer_lab.teaching.deck_claims import date_word_roles
    assert date_word_roles(text.split(), "2026-11-22") == roles


def test_a_phrase_of_another_date_is_refused():
    from transformer_lab.teaching.deck_claims import date_word_roles
    with pytest.raises(ValueError, match="not a wording of 2026-11-23"):
        date_word_roles("the first of may nineteen fifty".split(), "2026-11-23")


def test_every_wording_of_the_dates_task_is_understood():
    """Every held-out example of the task parses, so the slide's statistic counts them all."""
    from transformer_lab.teaching.deck_claims import date_word_roles
    data = tl.make_task("dates", seed=0, num_train=10, num_validation=10, num_test=300)
    for text, reference in data.test:
        roles = date_word_roles(text.split(), reference)
        assert sorted(set(roles.values())) == ["day", "month", "year"], (text, roles)
