"""Training runs: ``fit(RunConfig(...)) -> RunResult``, with and without an output directory.

Runs use deliberately tiny sizes (d_model 16, one layer, a few hundred examples) so that a
whole run takes a second or two.
"""

import dataclasses
import json
import signal
from pathlib import Path

import pytest
import torch

import transformer_lab as tl
from transformer_lab import run as run_module

SMALL = dict(d_model=16, num_heads=2, d_ff=32, num_layers=1, num_train=300, num_eval=20, max_tokens=128,
             device="cpu", warmup_steps=5)


def fit_config(out, **extra):
    return tl.RunConfig(**SMALL, output_dir=str(out), **extra)


def fit(config, callbacks=()):
    return tl.fit(config, callbacks).summary()


def losses(out):
    rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in rows if "loss" in r]


def test_exact_resume_gives_the_same_losses_as_an_uninterrupted_run(tmp_path):
    common = dict(task="reverse", log_interval=1, eval_interval=1000, seed=3)
    fit(fit_config(tmp_path / "whole", **common, steps=8))
    fit(fit_config(tmp_path / "split", **common, steps=4))
    assert len(losses(tmp_path / "split")) == 4
    fit(fit_config(tmp_path / "split", **common, steps=8, resume=True))
    assert losses(tmp_path / "split") == losses(tmp_path / "whole")
    a = tl.load_checkpoint(tmp_path / "whole")["model"]
    b = tl.load_checkpoint(tmp_path / "split")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_ctrl_c_stops_after_the_step_and_keeps_a_checkpoint(tmp_path, monkeypatch):
    calls = []

    def step_then_interrupt(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGINT)  # as if the user pressed Ctrl-C during step 3
        return tl.train_step(*args, **kwargs)

    monkeypatch.setattr(run_module, "train_step", step_then_interrupt)
    before = signal.getsignal(signal.SIGINT)   # default_int_handler, or SIG_IGN under nohup / a background job
    summary = fit(fit_config(tmp_path, task="copy", steps=50))
    assert summary["interrupted"] and summary["step"] == 3
    assert tl.load_checkpoint(tmp_path)["step"] == 3
    assert signal.getsignal(signal.SIGINT) is before   # put back as it was


def test_existing_checkpoints_are_never_overwritten(tmp_path):
    fit(fit_config(tmp_path, task="copy", steps=2))
    before = {p.name: p.read_bytes() for p in (tmp_path / "checkpoints").iterdir()}
    with pytest.raises(tl.TrainError, match="already holds checkpoints; pass --resume"):
        fit(fit_config(tmp_path, task="copy", steps=2))
    latest = tmp_path / "checkpoints" / "step_00000002.pt"
    latest.write_bytes(latest.read_bytes()[:100])  # corrupt it
    with pytest.raises(tl.TrainError, match="cannot resume: .*corrupt or unreadable"):
        fit(fit_config(tmp_path, task="copy", steps=4, resume=True))
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == sorted(before)


def test_resume_without_a_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(tl.TrainError, match="cannot resume: checkpoint .* does not exist"):
        fit(fit_config(tmp_path / "empty", resume=True, steps=2))


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(task="french"), "task must be one of ('copy', 'reverse', 'sort', 'dates', 'numbers', 'pronoun'), got 'french'"),
        (dict(preset="huge"), "preset must be one of ('tiny', 'base', 'big'), got 'huge'"),
        (dict(device="tpu"), "device must be one of ('auto', 'cpu', 'cuda', 'mps'), got 'tpu'"),
        (dict(steps=0), "steps must be a positive int, got 0"),
        (dict(resume=True, output_dir=None), "output_dir must be a directory when resume=True"),
    ],
)
def test_bad_input_lists_the_valid_choices(tmp_path, options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tl.RunConfig(**{"output_dir": str(tmp_path), **options})
    assert not tmp_path.joinpath("checkpoints").exists()


def test_a_missing_device_is_a_clear_error():
    missing = "cuda" if not torch.cuda.is_available() else "mps"
    if missing == "mps" and torch.backends.mps.is_available():
        pytest.skip("every device is present")
    with pytest.raises(ValueError, match=f"device '{missing}' was requested but is not available on this "
                                         f"machine; available: cpu"):
        tl.resolve_device(missing)
    assert tl.resolve_device("auto").type in ("cuda", "mps", "cpu")


class Recorder(tl.Callback):
    """Every event a run reports, in order."""

    def __init__(self):
        self.events = []

    def on_start(self, progress):
        self.events.append(("start", progress.step))

    def on_log(self, progress, row):
        self.events.append(("log", row["step"]))

    def on_step(self, progress):
        self.events.append(("step", progress.step))

    def on_evaluate(self, progress, row):
        self.events.append(("evaluate", row["step"]))

    def on_checkpoint(self, progress, path):
        self.events.append(("checkpoint", Path(path).name))

    def on_end(self, progress, result):
        self.events.append(("end", result.step))


def test_a_run_without_an_output_directory_writes_nothing_and_returns_the_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recorder = Recorder()
    result = tl.fit(tl.RunConfig(**SMALL, task="copy", steps=4, log_interval=2, eval_interval=2), [recorder])
    assert list(tmp_path.iterdir()) == []
    assert isinstance(result.model, tl.Transformer) and not result.model.training
    assert result.step == 4 and not result.interrupted and result.output_dir is None
    assert result.src_vocab == result.tgt_vocab and len(result.src_vocab) == result.model.config.src_vocab_size
    assert [r["step"] for r in result.history] == [2, 2, 4, 4]  # a log row, then a validation row
    assert {"token_accuracy", "exact_match", "bleu"} <= set(result.test)
    assert recorder.events == [("start", 0), ("step", 1), ("log", 2), ("step", 2), ("evaluate", 2),
                               ("step", 3), ("log", 4), ("step", 4), ("evaluate", 4), ("end", 4)]


def test_the_result_carries_the_examples_it_was_trained_validated_and_tested_on(tmp_path):
    config = tl.RunConfig(**SMALL, task="reverse", steps=2, eval_interval=2, seed=4)
    result = tl.fit(config)
    data = tl.make_task("reverse", seed=4, num_train=300, num_validation=20, num_test=20)
    assert (result.data.train, result.data.validation, result.data.test) == (data.train, data.validation, data.test)
    assert result.data.src_vocab is result.src_vocab and result.data.tgt_vocab is result.tgt_vocab
    assert result.test["examples"] == len(result.data.test) == 20
    assert {s for s, _ in result.data.test}.isdisjoint(s for s, _ in result.data.train)
    summary = result.summary()
    assert json.loads(json.dumps(summary)) == summary and "data" not in summary
    torch.save(result, tmp_path / "result.pt")  # as tt.cached keeps it
    assert torch.load(tmp_path / "result.pt", weights_only=False).data.test == data.test


def test_checkpoint_events_name_the_files_written(tmp_path):
    recorder = Recorder()
    tl.fit(fit_config(tmp_path, task="copy", steps=4, eval_interval=2), [recorder])
    assert [e for e in recorder.events if e[0] == "checkpoint"] == [
        ("checkpoint", "step_00000002.pt"), ("checkpoint", "step_00000004.pt")]
    assert json.loads((tmp_path / "summary.json").read_text())["step"] == 4


def test_run_config_defaults_are_the_papers_recipe_and_presets_are_data():
    config = tl.RunConfig()
    assert (config.label_smoothing, config.output_dir, config.beam_size) == (0.1, None, 1)
    assert tl.RECIPES["base"]["warmup_steps"] == 4000 and tl.RECIPES["base"]["lr_factor"] == 1.0
    run = config.replace(preset="base", task="dates").definition()
    assert (run["warmup_steps"], run["lr_factor"], run["max_tokens"]) == (4000, 1.0, 25000)
    assert tl.RunConfig(task="copy").definition()["model_overrides"] == {"num_layers": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 3
