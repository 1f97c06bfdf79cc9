"""The dates model the deck trains: checkpoint averaging is measured, and the step-by-step
decoders agree with the package's on it. What the slides say the model does is a claim
(tests/test_claims.py), checked on every build."""

import pytest
import torch

import transformer_lab as tl
from transformer_lab import teaching as tt

from deck_runs import dates_run

TEXT = "the ninth of july nineteen eighty-four"


@pytest.fixture(scope="module")
def dates():
    return dates_run()


@pytest.mark.slow
def test_checkpoint_averaging_is_measured_against_the_last_checkpoint(dates):
    assert dates.step == 300 and dates.averaged_steps == [200, 225, 250, 275, 300]
    assert dates.test["examples"] == dates.test_averaged["examples"] == 500
    assert dates.test["exact_match"] >= 0.98 and dates.test_averaged["exact_match"] >= 0.98


@pytest.mark.slow
def test_the_step_table_and_beam_tree_match_the_package_on_the_trained_model(dates):
    model, src_vocab, tgt_vocab = dates.model, dates.src_vocab, dates.tgt_vocab
    src = torch.tensor([src_vocab.encode(TEXT)])
    steps = tt.greedy_step_table(model, src, tl.BOS_ID, tl.EOS_ID, max_len=60, top=5)
    assert tl.greedy_decode(model, src, 60, tl.BOS_ID, tl.EOS_ID)[0].tolist() == [tl.BOS_ID] + [s.chosen for s in steps]
    tree = tt.beam_tree(model, src, 3, 60, tl.BOS_ID, tl.EOS_ID, 0.6)
    assert tree.best == tl.beam_search(model, src, 3, 60, tl.BOS_ID, tl.EOS_ID, 0.6)[0].tolist()


@pytest.mark.slow
def test_teacher_forcing_feeds_the_target_shifted_right_by_one():
    data = tl.make_task("dates", seed=0, num_train=1, num_validation=0, num_test=0)
    batch = tl.collate([tl.TranslationDataset(data.train, data.src_vocab, data.tgt_vocab)[0]])
    assert batch.tgt_in[0, 0] == tl.BOS_ID and batch.tgt_out[0, -1] == tl.EOS_ID
    assert torch.equal(batch.tgt_in[0, 1:], batch.tgt_out[0, :-1])
