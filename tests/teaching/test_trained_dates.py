"""What chapters 14 and 15 say about the dates model the deck trains: exact match climbs
inside the plotted run, checkpoint averaging is measured, and the step-by-step decoders
agree with the package's on it."""

import pytest
import torch

import transformer_lab as tl
from transformer_lab import teaching as tt

from deck_runs import dates_run

TEXT = "the ninth of july nineteen eighty-four"


@pytest.fixture(scope="module")
def dates():
    return dates_run()


def validation(dates):
    return {row["step"]: row for row in dates.history if "val_exact_match" in row}


@pytest.mark.slow
def test_exact_match_stays_near_zero_for_100_steps_then_reaches_near_100_percent_by_step_200(dates):
    rows = validation(dates)
    assert sorted(rows) == list(range(25, 301, 25))
    assert all(rows[s]["val_exact_match"] < 0.05 for s in (25, 50, 75, 100))
    assert rows[125]["val_exact_match"] < 0.5 and rows[200]["val_exact_match"] >= 0.95
    assert rows[25]["val_token_accuracy"] < rows[100]["val_token_accuracy"] < rows[200]["val_token_accuracy"]
    assert rows[25]["val_loss"] > rows[100]["val_loss"] > rows[300]["val_loss"]


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
    assert tgt_vocab.decode([tl.BOS_ID] + [s.chosen for s in steps]) == "1984-07-09"
    assert tl.greedy_decode(model, src, 60, tl.BOS_ID, tl.EOS_ID)[0].tolist() == [tl.BOS_ID] + [s.chosen for s in steps]
    # label smoothing's floor: every runner-up near epsilon / V (the notes' "about the same small probability")
    floor = 0.1 / len(tgt_vocab)
    assert all(floor / 3 < p < 3 * floor for s in steps for p in s.top_probs[1:])
    tree = tt.beam_tree(model, src, 3, 60, tl.BOS_ID, tl.EOS_ID, 0.6)
    assert tree.best == tl.beam_search(model, src, 3, 60, tl.BOS_ID, tl.EOS_ID, 0.6)[0].tolist()
    assert tgt_vocab.decode(tree.best) == "1984-07-09"


@pytest.mark.slow
def test_teacher_forcing_feeds_the_target_shifted_right_by_one():
    data = tl.make_task("dates", seed=0, num_train=1, num_validation=0, num_test=0)
    batch = tl.collate([tl.TranslationDataset(data.train, data.src_vocab, data.tgt_vocab)[0]])
    assert batch.tgt_in[0, 0] == tl.BOS_ID and batch.tgt_out[0, -1] == tl.EOS_ID
    assert torch.equal(batch.tgt_in[0, 1:], batch.tgt_out[0, :-1])
