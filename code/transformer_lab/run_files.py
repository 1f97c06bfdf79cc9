"""A training run's files, when it has an output directory.

    OUTPUT_DIR/checkpoints/step_*.pt   every checkpoint_interval steps, the newest kept
    OUTPUT_DIR/checkpoints/averaged.pt the average of the last k (Section 6.1)
    OUTPUT_DIR/metrics.jsonl           one JSON object per log line and per evaluation
    OUTPUT_DIR/summary.json            the test-set evaluation at the end

Nothing is ever overwritten by a new run: a directory that holds checkpoints can only be
resumed. Checkpoints are written atomically (see ``checkpoint``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .checkpoint import (
    AVERAGED_NAME,
    CheckpointError,
    average_checkpoints,
    checkpoint_name,
    list_checkpoints,
    load_checkpoint,
    prune_checkpoints,
    resolve_checkpoint,
    save_checkpoint,
)


class TrainError(RuntimeError):
    """A training run that cannot start (its message says why)."""


class RunDirectory:
    """The files of one run under ``path``; see the module docstring."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self.metrics = self.path / "metrics.jsonl"

    def create(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)

    def resume_state(self) -> dict:
        """The latest checkpoint, to continue from; a TrainError says why there is none."""
        try:
            return load_checkpoint(resolve_checkpoint(self.checkpoints))
        except CheckpointError as e:
            raise TrainError(f"cannot resume: {e}") from e

    def check_fresh(self) -> None:
        """Refuse to start a new run where one has saved checkpoints."""
        if list_checkpoints(self.checkpoints) or (self.checkpoints / AVERAGED_NAME).exists():
            raise TrainError(
                f"{str(self.path)!r} already holds checkpoints; pass --resume (resume=True) to continue that "
                f"run or choose another output directory (nothing was overwritten)"
            )

    def read_history(self, up_to_step: int) -> list[dict]:
        """The metrics rows written up to ``up_to_step`` (a resumed run drops later ones)."""
        if not self.metrics.is_file():
            return []
        rows = [json.loads(line) for line in self.metrics.read_text().splitlines() if line.strip()]
        return [r for r in rows if r.get("step", 0) <= up_to_step]

    def save(self, state: dict, keep: int, history: list[dict]) -> Path:
        """Write the checkpoint of ``state["step"]``, keep the newest ``keep``, and the metrics."""
        path = save_checkpoint(state, self.checkpoints / checkpoint_name(state["step"]))
        prune_checkpoints(self.checkpoints, keep)
        tmp = self.metrics.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in history))
        tmp.replace(self.metrics)
        return path

    def average_last(self, k: int) -> dict | None:
        """Average the last ``k`` step checkpoints into ``averaged.pt`` (needs two or more)."""
        found = list_checkpoints(self.checkpoints)
        if k < 2 or len(found) < 2:
            return None
        averaged = average_checkpoints(found[-k:])
        save_checkpoint(averaged, self.checkpoints / AVERAGED_NAME)
        return averaged

    def write_summary(self, summary: dict) -> None:
        (self.path / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
