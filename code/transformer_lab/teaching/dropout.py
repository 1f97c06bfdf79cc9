"""Dropout (Srivastava et al., 2014), measured on a run small enough for a slide.

Section 5.4 of Vaswani et al. (2017) applies dropout "to the output of each sub-layer,
before it is added to the sub-layer input and normalized" and "to the sums of the
embeddings and the positional encodings", with P_drop = 0.1 for the base model; Table 3,
row D, trains the base model without it: 24.6 BLEU instead of 25.8. In training PyTorch's
``nn.Dropout`` zeroes each value with probability p and scales the others by 1/(1 - p), so
nothing changes on average; at inference it is the identity.

:func:`dropout_runs` trains the package's tiny model on a few examples of a toy task once
per dropout rate, from the same initialisation and the same batches, and records the
cross-entropy of the next token (:func:`~.by_hand.next_token_loss`, evaluation mode) on
the training examples and on held-out ones as training goes: a like-for-like comparison in
which only the rate differs. Label smoothing is off in these runs (``label_smoothing``), so
that dropout is the only regulariser and the training loss can reach zero.

Shapes: B batch, T target length, V vocabulary.
"""

from __future__ import annotations

from typing import Sequence

import torch

from .. import checks
from ..data import collate, make_loaders
from ..model import Transformer, TransformerConfig
from ..training import LabelSmoothingLoss, WarmupSchedule, make_optimizer, train_step
from .by_hand import next_token_loss

#: The deck's run (slide "Dropout: ..."): the tiny preset on 100 training dates, 200 updates
#: of at most 256 target tokens, warm-up 100 and half of equation (3) as in the tiny recipe,
#: no label smoothing, evaluated every 25 updates on the 100 training and 200 held-out dates.
DROPOUT_SETTINGS = {"task": "dates", "num_train": 100, "num_validation": 200, "steps": 200, "max_tokens": 256,
                    "warmup_steps": 100, "lr_factor": 0.5, "label_smoothing": 0.0, "eval_interval": 25}


def dropout_runs(rates: Sequence[float] = (0.0, 0.1), seed: int = 0, **settings) -> list[dict]:
    """One run per dropout rate in ``rates``, each on one thread (restored afterwards):
    ``[{"rate": p, "steps": [...], "train_loss": [...], "validation_loss": [...]}, ...]``,
    losses in nats per target token at each evaluation. ``settings`` override
    :data:`DROPOUT_SETTINGS` (same names). The random state is left as it was."""
    unknown = sorted(set(settings) - set(DROPOUT_SETTINGS))
    if unknown:
        raise TypeError(f"settings must be among {sorted(DROPOUT_SETTINGS)}, got {unknown}")
    s = {**DROPOUT_SETTINGS, **settings}
    rates = [checks.fraction("rates[i]", r) for r in rates]
    if not rates:
        raise ValueError("rates must hold at least one dropout rate")
    for name in ("num_train", "num_validation", "steps", "max_tokens", "warmup_steps", "eval_interval"):
        checks.positive_int(name, s[name])
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            return [_run(rate, seed, s) for rate in rates]
    finally:
        torch.set_num_threads(before)


def _run(rate: float, seed: int, s: dict) -> dict:
    loaders = make_loaders(s["task"], seed=seed, max_tokens=s["max_tokens"], num_train=s["num_train"],
                           num_validation=s["num_validation"], num_test=0)
    torch.manual_seed(seed)  # the same initialisation for every rate: dropout draws nothing here
    config = TransformerConfig.tiny(len(loaders.src_vocab), len(loaders.tgt_vocab), dropout=rate)
    model = Transformer(config)
    optimizer = make_optimizer(model)
    scheduler = WarmupSchedule(optimizer, config.d_model, s["warmup_steps"], s["lr_factor"])
    loss_fn = LabelSmoothingLoss(s["label_smoothing"], ignore_index=config.pad_id)
    whole = {split: collate([loader.dataset[i] for i in range(len(loader.dataset))])
             for split, loader in (("train", loaders.train), ("validation", loaders.validation))}
    torch.manual_seed(seed + 1)  # the dropout masks; the batches come from the sampler's own seed
    out = {"rate": rate, "steps": [], "train_loss": [], "validation_loss": []}
    step, epoch = 0, 0
    while step < s["steps"]:
        loaders.train.batch_sampler.set_epoch(epoch)
        for batch in loaders.train:
            train_step(model, batch, loss_fn, optimizer, scheduler)
            step += 1
            if step % s["eval_interval"] == 0 or step == s["steps"]:
                model.eval()
                with torch.no_grad():
                    for split, b in whole.items():
                        loss = next_token_loss(model(b.src, b.tgt_in), b.tgt_out, config.pad_id)
                        out[f"{split}_loss"].append(float(loss))
                out["steps"].append(step)
            if step == s["steps"]:
                break
        epoch += 1
    return out


def final_losses(runs: list[dict], last: int = 3) -> dict[float, dict[str, float]]:
    """Per rate, the mean over the ``last`` evaluations of the training and validation
    loss and their gap (validation - training): a summary less noisy than one evaluation."""
    checks.positive_int("last", last)
    out = {}
    for run in runs:
        train = sum(run["train_loss"][-last:]) / len(run["train_loss"][-last:])
        validation = sum(run["validation_loss"][-last:]) / len(run["validation_loss"][-last:])
        out[run["rate"]] = {"train": train, "validation": validation, "gap": validation - train}
    return out
