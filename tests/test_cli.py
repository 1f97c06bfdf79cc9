"""The command lines: ``python -m transformer_lab.cli.train`` and ``python -m transformer_lab.cli.translate``.

They only parse arguments into a dataclass (``RunConfig``, ``TranslateOptions``) and call
the library. Runs use deliberately tiny sizes (d_model 16, one layer, a few hundred
examples) so that a whole run takes a second or two.
"""

import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import transformer_lab as tl
from transformer_lab import callbacks, distributed
from transformer_lab.cli import train as train_cli
from transformer_lab.cli import translate as translate_cli

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

    result = run_cli("translate", "--checkpoint", str(tmp_path), "--beam-size", "2", "--show-alignment", "ab?cz")
    assert result.returncode == 0, result.stderr
    assert "cross-attention" in result.stdout and "<unk>" in result.stdout
    # "?" is punctuation the vocabulary lacks: dropped, as the explorer does; "z" is a symbol it lacks
    assert "note: punctuation the char vocabulary lacks is dropped: ?" in result.stderr
    assert "not in the char vocabulary map to <unk>: 'z'" in result.stderr


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


# -- issue 22, item 12: lower case, progress in a log, one thread for tiny runs -------------------------------------


def test_translate_lower_cases_its_input_as_the_explorer_does(tmp_path, capsys):
    assert train_cli.main([*SMALL, "--task", "dates", "--steps", "2", "--output-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert tl.data.normalise_text("The Fourth of JULY") == "the fourth of july"
    mixed, lower = "The Fourth of JULY nineteen ninety-nine", "the fourth of july nineteen ninety-nine"
    outputs = []
    for text in (mixed, lower):
        assert translate_cli.main(["--checkpoint", str(tmp_path), "--show-alignment", text]) == 0
        out, err = capsys.readouterr()
        assert err == ""  # no "... map to <unk>" warning: "The", "Fourth", "JULY" are known words once lower-cased
        outputs.append(out)
    assert outputs[0] == outputs[1]
    assert " july " in outputs[0] and "<unk>" not in outputs[0]  # the alignment's rows are the lower-cased words
    # punctuation, as the explorer reads it: the dates' "," is a word; "!" and "." are dropped, with a note
    assert translate_cli.main(["--checkpoint", str(tmp_path), "The fourth of July, nineteen ninety-nine!"]) == 0
    out, err = capsys.readouterr()
    assert translate_cli.main(["--checkpoint", str(tmp_path), "the fourth of july , nineteen ninety-nine"]) == 0
    assert capsys.readouterr().out == out
    assert err == "note: punctuation the word vocabulary lacks is dropped: !\n"


@pytest.mark.slow
def test_training_into_a_pipe_prints_progress_lines_before_the_end(tmp_path):
    args = [a for a in SMALL if a != "--no-progress"]
    env = {**os.environ, "PYTHONPATH": CODE + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with subprocess.Popen([sys.executable, "-m", "transformer_lab.cli.train", *args, "--task", "copy", "--steps",
                           "400", "--eval-interval", "400", "--output-dir", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        first = proc.stderr.readline()
        still_running = proc.poll() is None
        rest = proc.communicate(timeout=120)[1]
    assert proc.returncode == 0, rest
    assert re.fullmatch(r"step 10/400: loss \d+\.\d{3}, lr \S+, \d+ tokens/s \(\d+\.\d s of training\)\n", first)
    assert still_running  # the line came while the run went on (400 steps take seconds)
    assert "\r" not in first + rest  # plain lines, no bar


def test_progress_lines_in_a_log_come_at_most_every_interval(monkeypatch):
    clock = iter([0.0, 3.0, 10.5, 12.0, 21.0])
    monkeypatch.setattr(callbacks.time, "monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = tl.ProgressBar(file=out, every=10)
    progress = callbacks.Progress(run={"task": "copy", "preset": "tiny"}, steps=None)
    bar.on_start(progress)
    assert bar.bar is None  # a StringIO is no terminal
    for step in (10, 20, 30, 40, 50):
        progress.step = step
        bar.on_log(progress, {"loss": 1.0, "lr": 1e-3, "tokens_per_s": 100.0})
    assert [line.split(":")[0] for line in out.getvalue().splitlines()] == ["step 10", "step 30", "step 50"]
    with pytest.raises(ValueError, match="every must be a number of seconds >= 0, got -1"):
        tl.ProgressBar(every=-1)


class _Threads(tl.Callback):
    def __init__(self):
        self.seen = set()

    def on_step(self, progress):
        self.seen.add(torch.get_num_threads())


def test_a_tiny_run_on_the_cpu_uses_one_thread_and_gives_the_count_back():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = _Threads()
        tl.fit(tl.RunConfig(task="copy", steps=2, num_train=64, num_eval=8, d_model=16, num_heads=2, d_ff=32,
                            device="cpu"), [seen])
        assert seen.seen == {1} and torch.get_num_threads() == 2
        seen = _Threads()
        tl.fit(tl.RunConfig(task="copy", preset="base", steps=1, num_train=64, num_eval=8, d_model=16, num_heads=2,
                            d_ff=32, num_layers=1, device="cpu"), [seen])
        assert seen.seen == {2}  # other presets: PyTorch's count, as it was
    finally:
        torch.set_num_threads(before)
    assert distributed.default_threads("tiny", torch.device("cpu")) == 1
    assert distributed.default_threads("tiny", torch.device("cuda")) is None
