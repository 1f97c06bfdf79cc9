"""Section 5: the learning-rate schedule, equation (3), and label smoothing (5.4)."""

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lab as tl


def test_schedule_rises_linearly_then_decays_as_inverse_square_root():
    lr = [tl.noam_learning_rate(s, 512, warmup_steps=4000) for s in range(1, 16001)]
    peak = max(range(len(lr)), key=lr.__getitem__) + 1
    assert peak == 4000
    assert lr[3999] == pytest.approx((512 * 4000) ** -0.5)
    assert lr[1999] == pytest.approx(lr[999] * 2)  # linear warm-up
    assert lr[15999] == pytest.approx(lr[3999] / 2)  # 4x the steps, half the rate


def test_schedule_starts_at_zero_and_scales_with_factor_and_d_model():
    assert tl.noam_learning_rate(0, 512) == 0.0
    assert tl.noam_learning_rate(100, 512, factor=2.0) == pytest.approx(2 * tl.noam_learning_rate(100, 512))
    assert tl.noam_learning_rate(100, 128) == pytest.approx(2 * tl.noam_learning_rate(100, 512))
    with pytest.raises(ValueError, match="warmup_steps must be a positive int"):
        tl.noam_learning_rate(1, 512, warmup_steps=0)


@settings(max_examples=25, deadline=None)
@given(smoothing=st.floats(0.0, 0.9), seed=st.integers(0, 1000))
def test_label_smoothing_equals_pytorch_cross_entropy(smoothing, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(2, 5, 11, generator=g) * 3
    target = torch.randint(0, 11, (2, 5), generator=g)
    target[0, -2:] = 0  # padding
    ours = tl.LabelSmoothingLoss(smoothing, ignore_index=0)(logits, target)
    theirs = F.cross_entropy(logits.reshape(-1, 11), target.reshape(-1), ignore_index=0, label_smoothing=smoothing)
    torch.testing.assert_close(ours, theirs)


def test_padding_positions_count_for_nothing():
    loss = tl.LabelSmoothingLoss(0.1, ignore_index=0)
    logits, target = torch.randn(1, 4, 7), torch.tensor([[3, 4, 0, 0]])
    changed = logits.clone()
    changed[0, 2:] = torch.randn(2, 7) * 10
    torch.testing.assert_close(loss(logits, target), loss(changed, target))


def test_smoothed_target_distribution():
    q = tl.LabelSmoothingLoss(0.1).target_distribution(torch.tensor([3]), vocab_size=10)
    torch.testing.assert_close(q.sum(-1), torch.ones(1))
    assert q[0, 3].item() == pytest.approx(0.9 + 0.01)
    assert q[0, 0].item() == pytest.approx(0.01)


def test_the_best_prediction_under_smoothing_is_not_one_hot():
    # "This hurts perplexity, as the model learns to be more unsure": the loss is lowest
    # when the model predicts the smoothed distribution, not the one-hot target.
    loss = tl.LabelSmoothingLoss(0.1, ignore_index=-1)
    target = torch.tensor([[3]])
    q = loss.target_distribution(target, 10)
    confident = torch.full((1, 1, 10), -20.0)
    confident[0, 0, 3] = 20.0
    assert loss(q.log(), target) < loss(confident, target)


def test_shape_mismatch_is_named():
    with pytest.raises(ValueError, match=r"logits must have shape target.shape \+ \(V,\)"):
        tl.LabelSmoothingLoss()(torch.randn(2, 5, 7), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="smoothing"):
        tl.LabelSmoothingLoss(1.0)


# --------------------------------------------------------------------------- the training loop pieces


def test_optimizer_has_the_papers_adam_settings():
    model = torch.nn.Linear(3, 2)
    group = tl.make_optimizer(model).param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9


def test_scheduler_follows_equation_3_update_by_update():
    model = torch.nn.Linear(3, 2)
    optimizer = tl.make_optimizer(model)
    scheduler = tl.WarmupSchedule(optimizer, d_model=64, warmup_steps=10, factor=2.0)
    seen = []
    for _ in range(30):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    expected = [tl.noam_learning_rate(n, 64, warmup_steps=10, factor=2.0) for n in range(1, 31)]
    assert seen == pytest.approx(expected)
    assert max(range(30), key=seen.__getitem__) == 9  # the peak is update number warmup_steps
    state = scheduler.state_dict()
    again = tl.WarmupSchedule(tl.make_optimizer(model), d_model=64, warmup_steps=10, factor=2.0)
    again.load_state_dict(state)
    assert again.get_last_lr() == scheduler.get_last_lr()


def test_scheduler_rejects_bad_arguments():
    optimizer = tl.make_optimizer(torch.nn.Linear(3, 2))
    with pytest.raises(ValueError, match="warmup_steps must be a positive int"):
        tl.WarmupSchedule(optimizer, d_model=64, warmup_steps=0)
    with pytest.raises(ValueError, match="factor must be positive"):
        tl.WarmupSchedule(optimizer, d_model=64, factor=0.0)


def copy_setup(seed=0, dropout=0.1):
    loaders = tl.make_loaders("copy", seed=seed, max_tokens=256, num_train=400, num_validation=40, num_test=40)
    config = tl.TransformerConfig.tiny(len(loaders.src_vocab), d_model=32, d_ff=64, num_layers=1, dropout=dropout)
    torch.manual_seed(seed)
    return loaders, tl.Transformer(config)


def test_a_few_steps_lower_the_loss_on_copy():
    loaders, model = copy_setup()
    optimizer = tl.make_optimizer(model)
    scheduler = tl.WarmupSchedule(optimizer, model.config.d_model, warmup_steps=10)
    loss_fn = tl.LabelSmoothingLoss(0.1)
    batches = list(loaders.train)[:4]
    before = tl.evaluate(model, batches, loaders.tgt_vocab, loss_fn)["loss"]
    for step in range(30):
        tl.train_step(model, batches[step % 4], loss_fn, optimizer, scheduler, clip_norm=1.0)
    after = tl.evaluate(model, batches, loaders.tgt_vocab, loss_fn)["loss"]
    assert after < 0.8 * before


def test_accumulated_micro_batches_equal_one_big_batch():
    # Section 5.1 batches by token count: the loss is a mean over all target tokens, so
    # two micro-batches must give the gradient of their union.
    loaders, model = copy_setup(dropout=0.0)
    twin = copy.deepcopy(model)
    loss_fn = tl.LabelSmoothingLoss(0.1)
    first, second = list(loaders.train)[:2]
    examples = [loaders.train.dataset[int(i)] for i in torch.cat([first.indices, second.indices])]
    union = tl.collate(examples)
    # SGD: the update is linear in the gradient (Adam's first step is about sign(g)).
    opt_a, opt_b = torch.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(twin.parameters(), lr=0.1)
    a = tl.train_step(model, [first, second], loss_fn, opt_a)
    b = tl.train_step(twin, union, loss_fn, opt_b)
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
    for p, q in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6)


def test_evaluation_reports_accuracy_exact_match_and_bleu():
    loaders, model = copy_setup()
    metrics = tl.evaluate(model, loaders.validation, loaders.tgt_vocab)
    assert set(metrics) >= {"loss", "token_accuracy", "exact_match", "bleu", "examples"}
    assert metrics["examples"] == 40
    assert 0 <= metrics["exact_match"] <= 1 and 0 <= metrics["token_accuracy"] <= 1


def test_evaluation_runs_the_model_in_eval_mode_and_restores_its_mode():
    # Dropout is for training (Section 5.4): evaluating a model left in training mode must
    # drop nothing (two evaluations agree) and hand the model back in training mode.
    loaders, model = copy_setup(dropout=0.5)
    batches = list(loaders.validation)[:1]
    model.train()
    first = tl.evaluate(model, batches, loaders.tgt_vocab, max_examples=4, extra_length=2)
    assert model.training and all(m.training for m in model.modules())
    second = tl.evaluate(model, batches, loaders.tgt_vocab, max_examples=4, extra_length=2)
    assert (first["loss"], first["samples"]) == (second["loss"], second["samples"])
    model.train(False)  # evaluation mode set by hand: what evaluate must do itself
    third = tl.evaluate(model, batches, loaders.tgt_vocab, max_examples=4, extra_length=2)
    assert (first["loss"], first["samples"]) == (third["loss"], third["samples"])


def test_no_position_reads_the_target_token_it_is_scored_on():
    # Section 3.1: the output embeddings "are offset by one position", so the prediction for
    # position t reads the targets before t only. Two targets that differ in their fourth
    # token give the same logits up to the position scored on it; only later positions read it.
    vocab = tl.Vocabulary("abcde", tokenize="char")
    examples = tl.TranslationDataset([("abcd", "abcd"), ("abcd", "abce")], vocab, vocab)
    config = tl.TransformerConfig(len(vocab), len(vocab), d_model=12, num_heads=3, d_ff=20, num_layers=1,
                                  dropout=0.0)
    model = tl.Transformer(config).eval()
    logits = []
    model.register_forward_hook(lambda module, inputs, output: logits.append(output.detach()))
    for i in (0, 1):
        tl.batch_loss_sum(model, tl.collate([examples[i]]), tl.LabelSmoothingLoss(0.0))
    first, second = logits  # (1, T, V); position 3 is scored on "d" or "e"
    torch.testing.assert_close(first[:, :4], second[:, :4])
    assert not torch.allclose(first[:, 4:], second[:, 4:])


def test_corpus_bleu_is_100_for_identical_text_and_scores_characters():
    assert tl.corpus_bleu(["2026-11-22", "1999-01-05"], ["2026-11-22", "1999-01-05"], char_level=True) == pytest.approx(100.0)
    assert tl.corpus_bleu(["2026-11-21"], ["2026-11-22"], char_level=True) < 100.0
    assert tl.corpus_bleu(["the cat sat on the mat"], ["the cat sat on the mat"]) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="same length"):
        tl.corpus_bleu(["a"], [])


@pytest.mark.parametrize("limit", [1, 7, 40, 100])
def test_evaluation_decodes_exactly_max_examples(limit):
    """Before: it stopped only after a whole batch, so 200 asked for could decode 372."""
    loaders, model = copy_setup()
    sizes = [b.src.size(0) for b in loaders.validation]
    assert len(sizes) > 1 and sizes[0] > 1           # so a limit can fall inside a batch
    metrics = tl.evaluate(model, loaders.validation, loaders.tgt_vocab, max_examples=limit)
    assert metrics["examples"] == min(limit, sum(sizes))
