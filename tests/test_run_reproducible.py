"""A run's weights depend on its definition alone: not on when it is evaluated or
checkpointed, nor on whether it was interrupted and resumed (issue 23, item 5).

Every comparison is bit for bit (``torch.equal`` on every parameter). Runs use the tiny
sizes of ``fault_helpers`` (d_model 16, one layer): a couple of dozen steps take a second.
"""

import json
import signal
from pathlib import Path

import pytest
import torch
from torch import nn

import transformer_lab as tl
from fault_helpers import SMALL
from transformer_lab import run as run_module
from transformer_lab.cli import train as train_cli

STEPS, STOP_AT = 24, 10
DEFINITION = dict(SMALL, task="reverse", seed=3)  # reverse: dropout 0.1, several epochs in 24 steps


def assert_same_weights(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    different = [name for name in a if not torch.equal(a[name], b[name])]
    assert different == [], f"{len(different)} of {len(a)} tensors differ, first {different[:3]}"


class StepRecorder:
    """Wraps ``train_step``: records each step's batch and the dropout masks drawn in it,
    and sends SIGINT (Ctrl-C) during step ``interrupt_at``."""

    def __init__(self, monkeypatch, interrupt_at: int | None = None):
        self.steps: list[dict] = []
        self.interrupt_at, self._hooked = interrupt_at, set()
        monkeypatch.setattr(run_module, "train_step", self)

    def _record_mask(self, module, inputs, output):
        if module.training and module.p > 0:
            self.steps[-1]["masks"].append(((output == 0) & (inputs[0] != 0)).clone())

    def __call__(self, model, batch, *args, **kwargs):
        if id(model) not in self._hooked:
            self._hooked.add(id(model))
            for m in model.modules():
                if isinstance(m, nn.Dropout):
                    m.register_forward_hook(self._record_mask)
        self.steps.append({"src": batch.src.clone(), "tgt": batch.tgt_out.clone(), "masks": []})
        if len(self.steps) == self.interrupt_at:
            signal.raise_signal(signal.SIGINT)  # as if the user pressed Ctrl-C during this step
        return tl.train_step(model, batch, *args, **kwargs)


def evaluated_steps(out: Path) -> list[int]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["step"] for r in rows if "val_loss" in r]


def test_the_weights_do_not_depend_on_when_the_run_is_evaluated_or_checkpointed(tmp_path):
    never = tl.fit(tl.RunConfig(**DEFINITION, steps=STEPS, eval_interval=1000)).model.state_dict()
    often = tl.fit(tl.RunConfig(**DEFINITION, steps=STEPS, eval_interval=3, checkpoint_interval=5,
                                output_dir=str(tmp_path / "often"))).model.state_dict()
    other = tl.fit(tl.RunConfig(**DEFINITION, steps=STEPS, eval_interval=7,
                                output_dir=str(tmp_path / "other"))).model.state_dict()
    assert evaluated_steps(tmp_path / "often") == [3, 6, 9, 12, 15, 18, 21, 24]
    assert_same_weights(never, often)
    assert_same_weights(never, other)


@pytest.mark.parametrize("resume_with", ["api", "command line"])
def test_a_run_interrupted_and_resumed_without_its_intervals_ends_as_the_uninterrupted_run(
        tmp_path, monkeypatch, resume_with):
    intervals = dict(eval_interval=4, checkpoint_interval=4)
    whole = StepRecorder(monkeypatch)
    expected = tl.fit(tl.RunConfig(**DEFINITION, **intervals, steps=STEPS, output_dir=str(tmp_path / "whole")))

    out = tmp_path / "split"
    first = StepRecorder(monkeypatch, interrupt_at=STOP_AT)  # between two checkpoints
    stopped = tl.fit(tl.RunConfig(**DEFINITION, **intervals, steps=STEPS, output_dir=str(out)))
    assert stopped.interrupted and stopped.step == STOP_AT

    resumed = StepRecorder(monkeypatch)
    if resume_with == "api":  # the run's definition again, and neither interval
        weights = tl.fit(tl.RunConfig(**DEFINITION, steps=STEPS, output_dir=str(out), resume=True)).model.state_dict()
    else:
        assert train_cli.main(["--resume", "--steps", str(STEPS), "--output-dir", str(out), "--no-progress"]) == 0
        weights = tl.load_checkpoint(out)["model"]
    # the resumed run evaluates and saves when the uninterrupted one did (the newest 5
    # checkpoints are kept: the one Ctrl-C saved, then every 4th step) ...
    assert sorted(p.name for p in (out / "checkpoints").glob("step_*.pt")) == [
        f"step_{step:08d}.pt" for step in (STOP_AT, 12, 16, 20, 24)]
    assert evaluated_steps(out) == evaluated_steps(tmp_path / "whole") == [4, 8, 12, 16, 20, 24]
    # ... sees the same batches in the same order and drops the same units ...
    assert len(first.steps) == STOP_AT and len(resumed.steps) == STEPS - STOP_AT
    for step, (a, b) in enumerate(zip(whole.steps[STOP_AT:], resumed.steps), start=STOP_AT + 1):
        assert torch.equal(a["src"], b["src"]) and torch.equal(a["tgt"], b["tgt"]), f"batch of step {step}"
        assert len(a["masks"]) == len(b["masks"]) > 0
        assert all(torch.equal(x, y) for x, y in zip(a["masks"], b["masks"])), f"dropout masks of step {step}"
    # ... and ends with the same weights, bit for bit
    assert_same_weights(expected.model.state_dict(), weights)
