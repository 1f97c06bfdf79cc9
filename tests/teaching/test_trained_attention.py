"""The trained pronoun model: its accuracy, and the attention statistics the slides use,
checked against a direct computation. What the slides say its heads do is a claim
(tests/test_claims.py), checked on every build and on ten variant builds
(benchmarks/claims_matrix.py)."""

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


@pytest.mark.slow
def test_the_pronoun_model_resolves_every_held_out_pronoun(pronoun):
    assert pronoun.step == 150 and pronoun.test["examples"] == len(pronoun.data.test) == 400
    assert pronoun.test["exact_match"] >= 0.99


def test_place_preference_counts_the_place_against_the_animal_whichever_is_meant():
    torch.manual_seed(0)
    data = tl.make_task("pronoun", seed=0, num_train=200, num_validation=0, num_test=40)
    model = tl.Transformer(tl.TransformerConfig.tiny(len(data.src_vocab), len(data.tgt_vocab))).eval()
    pref = tt.place_preference(model, data.src_vocab, data.test)
    for kind in ("place", "animal"):
        subset = [(s, n) for s, n in data.test if (n in PLACES) == (kind == "place")]
        counts = torch.zeros(2, model.config.num_heads)
        for sentence, _ in subset:
            place = next(w for w in sentence.split() if w in PLACES)
            animal = next(w for w in sentence.split() if w in ANIMALS)
            it, p, a = (sentence.split().index(w) for w in ("it", place, animal))
            maps = tt.encoder_attention(model, data.src_vocab, [sentence])[:, 0, :, it]  # (L, H, S)
            counts += (maps[:, :, p] > maps[:, :, a]).float()
        torch.testing.assert_close(pref[kind], counts / len(subset))
    with pytest.raises(ValueError, match="got none whose antecedent is the place"):
        tt.place_preference(model, data.src_vocab, [(s, n) for s, n in data.test if n in ANIMALS])


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


