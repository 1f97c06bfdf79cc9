"""The command lines: ``python -m transformer_lab.cli.train`` and ``python -m transformer_lab.cli.translate``.

They only parse arguments into a dataclass (``RunConfig``, ``TranslateOptions``) and call
the library. Runs use deliberately tiny sizes (d_model 16, one layer, a few hundred
examples) so that a whole run takes a second or two.
"""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import transformer_lab as tl
from transformer_lab.cli import train as train_cli

CODE = str(Path(__file__).resolve().parents[1] / "code")
SMALL = ["--d-model", "16", "--num-heads", "2", "--d-ff", "32", "--num-layers", "1", "--num-train", "300",
         "--num-eval", "20", "--max-tokens", "128", "--no-progress", "--device", "cpu", "--warmup-steps", "5"]


def run_cli(module, *args, timeout=120):
    env = {**os.environ, "PYTHONPATH": CODE + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", f"transformer_lab.cli.{module}", *args], capture_output=True,
                          text=True, env=env, timeout=timeout)


@pytest.mark.parametrize("module", ["train", "translate"])
def test_help(module):
    result = run_cli(module, "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: python -m transformer_lab.cli." + module in result.stdout
    assert "--checkpoint" in result.stdout if module == "translate" else "--time-budget" in result.stdout


def test_every_run_option_is_a_command_line_option_with_the_same_default():
    config, progress = train_cli.parse(["--task", "dates", "--time-budget", "5", "--no-progress"])
    assert progress is False
    defaults = {f.name: f.default for f in dataclasses.fields(tl.RunConfig)}
    expected = {**defaults, "task": "dates", "time_budget": 5.0, "output_dir": train_cli.DEFAULT_OUTPUT_DIR}
    assert dataclasses.asdict(config) == expected


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


def test_a_corrupt_checkpoint_stops_resume_with_status_2(tmp_path):
    assert train_cli.main([*SMALL, "--task", "copy", "--steps", "2", "--output-dir", str(tmp_path)]) == 0
    latest = tmp_path / "checkpoints" / "step_00000002.pt"
    latest.write_bytes(latest.read_bytes()[:100])  # corrupt it
    result = run_cli("train", *SMALL, "--task", "copy", "--steps", "4", "--resume", "--output-dir", str(tmp_path))
    assert result.returncode == 2
    assert "cannot resume" in result.stderr and "corrupt or unreadable" in result.stderr
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_00000002.pt"]


def test_bad_input_via_the_command_line(tmp_path):
    result = run_cli("train", "--task", "french", "--output-dir", str(tmp_path))
    assert result.returncode == 2
    assert "error: task must be one of ('copy', 'reverse', 'sort', 'dates', 'numbers', 'pronoun'), got 'french'" in result.stderr
    result = run_cli("translate", "--checkpoint", str(tmp_path / "missing"), "hello")
    assert result.returncode == 2 and "does not exist" in result.stderr
    result = run_cli("translate", "--checkpoint", str(tmp_path / "missing"), "--beam-size", "0", "hello")
    assert result.returncode == 2 and "error: beam_size must be a positive int, got 0" in result.stderr
