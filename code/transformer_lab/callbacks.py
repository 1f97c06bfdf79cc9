"""What a training run reports while it runs: events for callbacks.

:func:`transformer_lab.fit` calls every callback's hooks on the main process, in this
order for each update: ``on_log`` (every ``log_interval`` steps, the training loss row),
``on_step``, ``on_evaluate`` (every ``eval_interval`` steps, the validation row) and
``on_checkpoint`` (after a checkpoint is written, only with an output directory);
``on_start`` before the first update and ``on_end`` with the result. Override the hooks
you need; the others do nothing.

Two ready ones serve the command line: :class:`ProgressBar` (a tqdm bar on a terminal,
imported only when a bar starts; in a log, a plain line every ``every`` seconds and one per
evaluation) and
:class:`ConsoleReport` (the test results, printed at the end).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run import RunResult


@dataclass
class Progress:
    """Where a run stands: updates done, the sampler's epoch and position in it, the
    seconds of training so far and the metric rows. ``run`` defines the run (task,
    preset, seed, ...); ``steps`` is the number of updates to reach (``None``: until the
    time budget)."""

    run: dict
    steps: int | None = None
    step: int = 0
    epoch: int = 0
    position: int = 0
    train_seconds: float = 0.0
    history: list[dict] = field(default_factory=list)


class Callback:
    """Receives a run's events; see the module docstring."""

    def on_start(self, progress: Progress) -> None:
        pass

    def on_log(self, progress: Progress, row: dict) -> None:
        pass

    def on_step(self, progress: Progress) -> None:
        pass

    def on_evaluate(self, progress: Progress, row: dict) -> None:
        pass

    def on_checkpoint(self, progress: Progress, path: Path) -> None:
        pass

    def on_end(self, progress: Progress, result: "RunResult") -> None:
        pass


class ProgressBar(Callback):
    """Progress on ``file`` (default: ``sys.stderr`` when the run starts). On a terminal, a
    tqdm bar with the latest loss, learning rate and tokens/s, and the validation lines
    above it. Anywhere else (a log file, a pipe) no bar, whose carriage-return updates
    would fill the log: plain lines, one per evaluation and one with the training loss at
    the first logged step and then at most every ``every`` seconds. ``bar=True`` or
    ``False`` decides instead."""

    def __init__(self, bar: bool | None = None, file=None, every: float = 10.0):
        if isinstance(every, bool) or not isinstance(every, (int, float)) or not every >= 0:
            raise ValueError(f"every must be a number of seconds >= 0, got {every!r}")
        self.want_bar, self.file, self.every = bar, file, float(every)
        self.bar = None
        self.out = None
        self.last_line = None  # time.monotonic() of the last loss line in a log

    def on_start(self, progress: Progress) -> None:
        self.out = self.file if self.file is not None else sys.stderr
        if not (self.want_bar if self.want_bar is not None else _is_terminal(self.out)):
            return
        from tqdm import tqdm  # only the command line's bar needs it

        run = progress.run
        self.bar = tqdm(total=progress.steps, initial=progress.step, unit="step", dynamic_ncols=True,
                        desc=f"{run['task']} ({run['preset']})", file=self.out)

    def on_log(self, progress: Progress, row: dict) -> None:
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{row['loss']:.3f}", lr=f"{row['lr']:.2e}", tok_s=f"{row['tokens_per_s']:.0f}")
            return
        now = time.monotonic()
        if self.last_line is not None and now - self.last_line < self.every:
            return
        self.last_line = now
        total = f"/{progress.steps}" if progress.steps is not None else ""
        print(f"step {progress.step}{total}: loss {row['loss']:.3f}, lr {row['lr']:.2e}, "
              f"{row['tokens_per_s']:.0f} tokens/s ({progress.train_seconds:.1f} s of training)",
              file=self.out, flush=True)

    def on_step(self, progress: Progress) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def on_evaluate(self, progress: Progress, row: dict) -> None:
        line = (f"step {progress.step}: val loss {row['val_loss']:.3f}, token acc "
                f"{row['val_token_accuracy']:.3f}, exact {row['val_exact_match']:.3f}, "
                f"BLEU {row['val_bleu']:.1f} ({progress.train_seconds:.1f} s of training)")
        if self.bar is not None:
            self.bar.write(line, file=self.out)
        else:
            print(line, file=self.out, flush=True)

    def on_end(self, progress: Progress, result: "RunResult") -> None:
        if self.bar is not None:
            self.bar.close()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


class ConsoleReport(Callback):
    """At the end: the test-set results on stdout, or where an interrupted run was saved."""

    def on_end(self, progress: Progress, result: "RunResult") -> None:
        if result.interrupted:
            if result.output_dir is None:
                print(f"interrupted: stopped at step {result.step}", file=sys.stderr)
            else:
                print(f"interrupted: saved step {result.step} in {result.output_dir / 'checkpoints'}; "
                      f"continue with --resume", file=sys.stderr)
            return
        t = result.test
        print(f"test ({t['examples']} examples, step {result.step}, {result.train_seconds:.1f} s of "
              f"training): token accuracy {t['token_accuracy']:.4f}, exact match {t['exact_match']:.4f}, "
              f"BLEU {t['bleu']:.2f}")
        if result.test_averaged is not None:
            t = result.test_averaged
            print(f"test, average of steps {result.averaged_steps}: token accuracy "
                  f"{t['token_accuracy']:.4f}, exact match {t['exact_match']:.4f}, BLEU {t['bleu']:.2f}")
