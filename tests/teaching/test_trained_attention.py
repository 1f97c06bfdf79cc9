"""What the slides say about the trained pronoun model (chapters 06, 08 and 11a): its
accuracy and the attention statistic of its heads, asserted on the model the deck trains;
and the statistic itself, checked against a direct computation."""

import pytest
import torch

import transformer_lab as tl
from transformer_lab import teaching as tt
from transformer_lab.data import ANIMALS, PLACES

from deck_runs import pronoun_run

TIRED = "the cat did not cross the road because it was too tired"
WIDE = "the cat did not cross the road because it was too wide"


@pytest.fixture(scope="module")
def pronoun():
    return pronoun_run()


@pytest.fixture(scope="module")
def stats(pronoun):
    return tt.antecedent_attention(pronoun.model, pronoun.src_vocab, pronoun.data.test)


def split_stats(pronoun, kind):
    subset = [(s, n) for s, n in pronoun.data.test if (n in ANIMALS) == (kind == "animal")]
    return tt.antecedent_attention(pronoun.model, pronoun.src_vocab, subset)


@pytest.mark.slow
def test_the_pronoun_model_resolves_every_held_out_pronoun(pronoun):
    assert pronoun.step == 150 and pronoun.test["examples"] == len(pronoun.data.test) == 400
    assert pronoun.test["exact_match"] >= 0.99


@pytest.mark.slow
def test_layer_0_heads_sit_at_chance_and_layer_1_heads_prefer_the_antecedent(stats):
    assert stats.examples == 400
    assert stats.more_on_antecedent.shape == (2, 4)
    assert ((stats.more_on_antecedent[0] > 0.35) & (stats.more_on_antecedent[0] < 0.65)).all()
    assert (stats.more_on_antecedent[1] > 0.75).all()
    assert (stats.weight_on_antecedent[1] > stats.weight_on_other[1]).all()
    assert stats.best_head()[0] == 1


def place_preferred(pronoun, kind):
    """(L, H): the share of the test sentences whose antecedent is ``kind`` where "it" puts
    more weight on the place than on the animal, right or wrong."""
    subset = [(s, next(w for w in s.split() if w in PLACES)) for s, n in pronoun.data.test
              if (n in ANIMALS) == (kind == "animal")]
    return tt.antecedent_attention(pronoun.model, pronoun.src_vocab, subset).more_on_antecedent


@pytest.mark.slow
def test_layer_1_finds_the_animal_and_mostly_looks_elsewhere_for_the_place(pronoun):
    animal, place = split_stats(pronoun, "animal"), split_stats(pronoun, "place")
    assert (animal.more_on_antecedent[1] >= 0.95).all()
    # "When it is the place, they look elsewhere more often" (chapter 11a): less often
    # than with the animal, and still in most sentences
    assert (place.more_on_antecedent[1] < animal.more_on_antecedent[1] - 0.05).all()
    assert (place.more_on_antecedent[1] > 0.5).all()
    assert (place.weight_on_antecedent[1] < 0.3).all()


@pytest.mark.slow
def test_layer_0_cannot_know_which_noun_is_meant_and_layer_1_can(pronoun):
    """Chapter 11a: layer 0 sits at chance because it attends from "it" before the adjective
    is mixed in: each of its heads prefers the place about as often whichever noun "it"
    refers to. Layer 1's heads prefer the place far more often when it is the antecedent."""
    if_place, if_animal = place_preferred(pronoun, "place"), place_preferred(pronoun, "animal")
    assert ((if_place[0] - if_animal[0]).abs() < 0.1).all()
    assert (if_place[1] - if_animal[1] > 0.5).all()


@pytest.mark.slow
def test_the_best_head_reads_cat_for_tired_and_barely_prefers_road_for_wide(pronoun, stats):
    layer, head = stats.best_head()
    tired, words = tt.weights_from_it(pronoun.model, pronoun.src_vocab, TIRED, layer, head)
    wide, _ = tt.weights_from_it(pronoun.model, pronoun.src_vocab, WIDE, layer, head)
    cat, road = words.index("cat"), words.index("road")
    assert tired[cat] > 0.9
    assert wide[cat] < wide[road] < 0.1
    train = {s for s, _ in pronoun.data.train}
    assert TIRED not in train and WIDE not in train


@pytest.mark.slow
def test_chapter_08s_heads_each_read_something_else(pronoun):
    maps = tt.encoder_attention(pronoun.model, pronoun.src_vocab, [TIRED])  # (L, 1, H, S, S)
    words = TIRED.split() + ["<eos>"]
    favourite = maps[0, 0].mean(dim=1).argmax(dim=-1).tolist()  # per layer-0 head: the key read most
    peak = maps[0, 0].max(dim=-1).values.mean(dim=-1)  # (H,) per head: each query's largest weight, averaged
    # Which head does what depends on the training run (the heads are interchangeable),
    # the slide's titles are computed: one head spreads its weight, and of the other three
    # two read the same word ("tired") and one reads "road".
    assert int((peak < 0.5).sum()) == 1
    assert sorted(words[favourite[h]] for h in range(len(peak)) if peak[h] >= 0.5) == ["road", "tired", "tired"]
    it_row = maps[1, 0, 3, words.index("it")]
    assert words[int(it_row.argmax())] == "cat"  # chapter 06's trained head


def test_the_statistic_counts_sentences_where_it_weights_the_antecedent_more():
    torch.manual_seed(0)
    data = tl.make_task("pronoun", seed=0, num_train=20, num_validation=0, num_test=30)
    model = tl.Transformer(tl.TransformerConfig.tiny(len(data.src_vocab), len(data.tgt_vocab))).eval()
    stats = tt.antecedent_attention(model, data.src_vocab, data.test)
    for i, (sentence, noun) in enumerate(data.test[:5]):
        it, right, other = tt.noun_positions(sentence, noun)
        src = torch.tensor([data.src_vocab.encode(sentence)])
        with tl.record_attention(model) as attn:
            model.encode(src, model.src_mask(src))
        for layer in range(2):
            row = attn.encoder[layer][0, :, it]  # (H, S)
            alone = tt.antecedent_attention(model, data.src_vocab, [(sentence, noun)])
            torch.testing.assert_close(alone.weight_on_antecedent[layer], row[:, right])
            torch.testing.assert_close(alone.more_on_antecedent[layer], (row[:, right] > row[:, other]).float())
    assert stats.examples == 30 and ((stats.more_on_antecedent >= 0) & (stats.more_on_antecedent <= 1)).all()


def test_noun_positions_finds_it_and_both_nouns_or_says_what_is_missing():
    assert tt.noun_positions(WIDE, "road") == (8, 6, 1)
    with pytest.raises(ValueError, match=r"sentence must hold exactly one noun besides 'cat', got 'the cat"):
        tt.noun_positions("the cat slept because it was too tired", "cat")
    with pytest.raises(ValueError, match=r"sentence must hold 'it' and the antecedent 'dog' once each"):
        tt.noun_positions(TIRED, "dog")


@pytest.mark.slow
def test_the_head_for_both_kinds_reads_the_antecedent_of_each_running_sentence(pronoun):
    # The opening slide and the explorer show this head on "... too tired" (cat) and
    # "... too wide" (road): it must put the larger weight on the right noun in both.
    layer, head = tt.head_for_both_kinds(pronoun.model, pronoun.src_vocab, pronoun.data.test)
    assert layer == pronoun.model.config.num_layers - 1  # layer 0 cannot tell the nouns apart
    for sentence, noun in [(tt.RUNNING_SENTENCE, "cat"), (tt.CONTRAST_SENTENCE, "road")]:
        weights, words = tt.weights_from_it(pronoun.model, pronoun.src_vocab, sentence, layer, head)
        _, right, other = tt.noun_positions(sentence, noun)
        assert weights[right] > 5 * weights[other], (sentence, weights[right], weights[other])
    with pytest.raises(ValueError, match="both an animal and a place"):
        tt.head_for_both_kinds(pronoun.model, pronoun.src_vocab,
                               [s for s in pronoun.data.test if s[1] in ANIMALS])
