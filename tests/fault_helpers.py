"""What the fault tests share: a tiny run, the command lines in a subprocess, and ways to
damage a checkpoint.

Runs use deliberately tiny sizes (d_model 16, one layer, a few hundred examples) so that a
whole run takes a second or two.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

import transformer_lab as tl

CODE = str(Path(__file__).resolve().parents[1] / "code")
SMALL = dict(d_model=16, num_heads=2, d_ff=32, num_layers=1, num_train=300, num_eval=20, max_tokens=128,
             device="cpu", warmup_steps=5)
SMALL_ARGS = ["--d-model", "16", "--num-heads", "2", "--d-ff", "32", "--num-layers", "1", "--num-train", "300",
              "--num-eval", "20", "--max-tokens", "128", "--device", "cpu", "--warmup-steps", "5"]


def cli_env() -> dict:
    return {**os.environ, "PYTHONPATH": CODE + os.pathsep + os.environ.get("PYTHONPATH", "")}


def cli_command(module: str, *args) -> list[str]:
    return [sys.executable, "-m", f"transformer_lab.cli.{module}", *map(str, args)]


def run_cli(module: str, *args, timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    """``python -m transformer_lab.cli.<module> args`` in a subprocess, output captured."""
    return subprocess.run(cli_command(module, *args), capture_output=True, text=True, env=cli_env(),
                          timeout=timeout, **popen)


def train(out: Path, **options) -> tl.RunResult:
    """A two-step run into ``out`` (its checkpoints: step 1 and 2, and averaged.pt)."""
    options = {"task": "copy", "steps": 2, "eval_interval": 1, "average_last": 2, **options}
    return tl.fit(tl.RunConfig(**SMALL, output_dir=str(out), **options))


def copy_run(run: Path, to: Path) -> Path:
    shutil.copytree(run, to)
    return to


def rewrite_checkpoint(path: Path, edit) -> Path:
    """Load ``path`` as torch would, let ``edit(state)`` change it, and save it back the
    way the package saves (so the file is a loadable checkpoint, digest included)."""
    state = torch.load(path, weights_only=True)
    state.pop("sha256", None)
    edit(state)
    tl.save_checkpoint(state, path)
    return path


def one_line_error(stderr: str) -> str:
    """The error line of a command line that failed cleanly (asserts there is no traceback)."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, stderr
    return lines[0]
