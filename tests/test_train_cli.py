"""The command lines: ``python -m transformer_lab.train`` and ``python -m transformer_lab.translate``.

Runs use deliberately tiny sizes (d_model 16, one layer, a few hundred examples) so that a
whole run takes a second or two.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import transformer_lab as tl
from transformer_lab import train as train_module
from transformer_lab.train import build_parser, fit

CODE = str(Path(__file__).resolve().parents[1] / "code")
SMALL = ["--d-model", "16", "--num-heads", "2", "--d-ff", "32", "--num-layers", "1", "--num-train", "300",
         "--num-eval", "20", "--max-tokens", "128", "--no-progress", "--device", "cpu", "--warmup-steps", "5"]


def run_cli(module, *args, timeout=120):
    env = {**os.environ, "PYTHONPATH": CODE + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", f"transformer_lab.{module}", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


def fit_args(out, *extra):
    return build_parser().parse_args([*SMALL, "--output-dir", str(out), *extra])


def losses(out):
    rows = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    return [(r["step"], r["loss"]) for r in rows if "loss" in r]


@pytest.mark.parametrize("module", ["train", "translate"])
def test_help(module):
    result = run_cli(module, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: python -m transformer_lab." + module in result.stdout
    assert "--checkpoint" in result.stdout if module == "translate" else "--time-budget" in result.stdout


@pytest.mark.slow
def test_short_run_then_translate_with_alignment(tmp_path):
    result = run_cli("train", *SMALL, "--task", "copy", "--steps", "6", "--eval-interval", "3",
                     "--average-last", "2", "--output-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "exact match" in result.stdout
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "averaged.pt", "step_00000003.pt", "step_00000006.pt"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"token_accuracy", "exact_match", "bleu"} <= set(summary["test"])
    assert summary["averaged_steps"] == [3, 6]
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert any("val_exact_match" in r for r in rows) and any("tokens_per_s" in r for r in rows)

    result = run_cli("translate", "--checkpoint", str(tmp_path), "--beam-size", "2", "--show-alignment", "ab?c")
    assert result.returncode == 0, result.stderr
    assert "cross-attention" in result.stdout and "<unk>" in result.stdout
    assert "not in the char vocabulary map to <unk>: '?'" in result.stderr


def test_exact_resume_gives_the_same_losses_as_an_uninterrupted_run(tmp_path):
    common = ["--task", "reverse", "--log-interval", "1", "--eval-interval", "1000", "--seed", "3"]
    fit(fit_args(tmp_path / "whole", *common, "--steps", "8"))
    fit(fit_args(tmp_path / "split", *common, "--steps", "4"))
    assert len(losses(tmp_path / "split")) == 4
    fit(fit_args(tmp_path / "split", *common, "--steps", "8", "--resume"))
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

    monkeypatch.setattr(train_module, "train_step", step_then_interrupt)
    summary = fit(fit_args(tmp_path, "--task", "copy", "--steps", "50"))
    assert summary["interrupted"] and summary["step"] == 3
    assert tl.load_checkpoint(tmp_path)["step"] == 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_existing_checkpoints_are_never_overwritten(tmp_path):
    fit(fit_args(tmp_path, "--task", "copy", "--steps", "2"))
    before = {p.name: p.read_bytes() for p in (tmp_path / "checkpoints").iterdir()}
    with pytest.raises(train_module.TrainError, match="already holds checkpoints; pass --resume"):
        fit(fit_args(tmp_path, "--task", "copy", "--steps", "2"))
    latest = tmp_path / "checkpoints" / "step_00000002.pt"
    latest.write_bytes(latest.read_bytes()[:100])  # corrupt it
    result = run_cli("train", *SMALL, "--task", "copy", "--steps", "4", "--resume", "--output-dir", str(tmp_path))
    assert result.returncode == 2
    assert "cannot resume" in result.stderr and "corrupt or unreadable" in result.stderr
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == sorted(before)


def test_resume_without_a_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(train_module.TrainError, match="cannot resume: checkpoint .* does not exist"):
        fit(fit_args(tmp_path / "empty", "--resume", "--steps", "2"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--task", "french"], "unknown task 'french'; valid tasks: copy, reverse, sort, dates, numbers"),
        (["--preset", "huge"], "unknown preset 'huge'; valid presets: tiny, base, big"),
        (["--device", "tpu"], "unknown device 'tpu'; valid devices: auto, cpu, cuda, mps"),
        (["--steps", "0"], "--steps must be a positive int"),
    ],
)
def test_bad_input_lists_the_valid_choices(tmp_path, args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fit(build_parser().parse_args(["--output-dir", str(tmp_path), *args]))
    assert not tmp_path.joinpath("checkpoints").exists()


def test_bad_input_via_the_command_line(tmp_path):
    result = run_cli("train", "--task", "french", "--output-dir", str(tmp_path))
    assert result.returncode == 2
    assert "error: unknown task 'french'; valid tasks: copy, reverse, sort, dates, numbers" in result.stderr
    result = run_cli("translate", "--checkpoint", str(tmp_path / "missing"), "hello")
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_a_missing_device_is_a_clear_error():
    missing = "cuda" if not torch.cuda.is_available() else "mps"
    if missing == "mps" and torch.backends.mps.is_available():
        pytest.skip("every device is present")
    with pytest.raises(ValueError, match=f"device '{missing}' was requested but is not available on this "
                                         f"machine; available: cpu"):
        tl.resolve_device(missing)
    assert tl.resolve_device("auto").type in ("cuda", "mps", "cpu")
