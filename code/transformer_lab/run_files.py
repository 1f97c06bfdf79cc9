"""A training run's files, when it has an output directory.

    OUTPUT_DIR/checkpoints/step_*.pt   every checkpoint_interval steps, the newest kept
    OUTPUT_DIR/checkpoints/averaged.pt the average of the last k (Section 6.1)
    OUTPUT_DIR/metrics.jsonl           one JSON object per log line and per evaluation
    OUTPUT_DIR/summary.json            the test-set evaluation at the end
    OUTPUT_DIR/.lock                   held while a run writes here (kept afterwards)

Nothing is ever overwritten by a new run: a directory that holds checkpoints can only be
resumed, and one run at a time holds the directory's lock (``fcntl.flock`` on ``.lock``:
the kernel releases it when the process ends, however it ends, so a killed run never
blocks the next one). The directory is checked for writing before the first step, and
every file is written atomically (a temporary name, then ``os.replace``), with the mode
``open`` gives under the umask (``atomic_files``); a failed write
(a full disk) is a :class:`TrainError` naming the file, the earlier files intact.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Iterator

from .checkpoint import (
    AVERAGED_NAME,
    CheckpointError,
    CheckpointWriteError,
    average_checkpoints,
    checkpoint_name,
    describe_error,
    list_checkpoints,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from .atomic_files import create_beside
from .run_config import RESUMABLE, RunConfig

try:
    import fcntl
except ImportError:  # Windows: no flock, so no lock (the rest works)
    fcntl = None

LOCK_NAME = ".lock"
# What a step checkpoint holds beyond a model: everything a run needs to continue.
RESUME_KEYS = ("run", "optimizer", "scheduler", "rng", "sampler")


class TrainError(RuntimeError):
    """A training run that cannot start or go on (its message says why)."""


class RunDirectory:
    """The files of one run under ``path``; see the module docstring."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self.metrics = self.path / "metrics.jsonl"

    @contextlib.contextmanager
    def claim(self) -> Iterator["RunDirectory"]:
        """Create the directory, take its lock and check that it can be written, for the
        length of the ``with`` block; a TrainError says why not."""
        if self.path.exists() and not self.path.is_dir():
            raise TrainError(f"output_dir {str(self.path)!r} is a file, not a directory")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TrainError(f"cannot create output_dir {str(self.path)!r}: {e.strerror or e}") from e
        fd = self._lock()
        try:
            self._check_writable()
            yield self
        finally:
            os.close(fd)  # releases the lock

    def _lock(self) -> int:
        """Open ``.lock`` and hold an exclusive flock on it; refuse if another run holds it."""
        lock = self.path / LOCK_NAME
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise TrainError(f"cannot write to output_dir {str(self.path)!r}: {e.strerror or e}") from e
        if fcntl is None:
            return fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "a process that is starting"
            os.close(fd)
            raise TrainError(
                f"output_dir {str(self.path)!r} is in use by another training run ({holder}); wait for it to "
                f"end or choose another output directory (nothing was written)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        return fd

    def _check_writable(self) -> None:
        """Create and delete a file in the directory and in ``checkpoints/``, so that a
        directory we may not write to stops the run before its first step, not at its
        first save (file modes alone would not do: root ignores them)."""
        for folder in (self.path, self.checkpoints):
            try:
                folder.mkdir(exist_ok=True)
                fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=folder)
                os.close(fd)
                os.unlink(probe)
            except OSError as e:
                raise TrainError(f"cannot write to {str(folder)!r}: {e.strerror or e} (checked before training; "
                                 f"nothing was trained)") from e

    def resume_state(self) -> dict:
        """The latest step checkpoint, to continue from; a TrainError says why there is none."""
        found = list_checkpoints(self.checkpoints)
        if not found:
            why = f"only {AVERAGED_NAME}, a model for evaluation without the optimizer's state" \
                if (self.checkpoints / AVERAGED_NAME).is_file() else "no checkpoint"
            raise TrainError(f"cannot resume: checkpoint {str(self.checkpoints / 'step_*.pt')!r} does not exist "
                             f"(the directory holds {why})")
        try:
            state = load_checkpoint(found[-1])
        except CheckpointError as e:
            raise TrainError(f"cannot resume: {e}") from e
        missing = [k for k in RESUME_KEYS if k not in state]
        if missing:
            raise TrainError(f"cannot resume: checkpoint {state['path']!r} lacks {', '.join(missing)}, which a "
                             f"run needs to continue")
        return state

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
        try:
            rows = [json.loads(line) for line in self.metrics.read_text().splitlines() if line.strip()]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise TrainError(f"cannot resume: {str(self.metrics)!r} is unreadable: {e}") from e
        return [r for r in rows if isinstance(r, dict) and r.get("step", 0) <= up_to_step]

    def save(self, state: dict, keep: int, history: list[dict]) -> Path:
        """Write the checkpoint of ``state["step"]``, keep the newest ``keep``, and the metrics."""
        path = self._save_checkpoint(state, checkpoint_name(state["step"]))
        prune_checkpoints(self.checkpoints, keep)
        _write_atomically(self.metrics, "".join(json.dumps(r) + "\n" for r in history))
        return path

    def average_last(self, k: int) -> dict | None:
        """Average the last ``k`` step checkpoints into ``averaged.pt`` (needs two or more)."""
        found = list_checkpoints(self.checkpoints)
        if k < 2 or len(found) < 2:
            return None
        averaged = average_checkpoints(found[-k:])
        self._save_checkpoint(averaged, AVERAGED_NAME)
        return averaged

    def write_summary(self, summary: dict) -> None:
        _write_atomically(self.path / "summary.json", json.dumps(summary, indent=2) + "\n")

    def _save_checkpoint(self, state: dict, name: str) -> Path:
        try:
            return save_checkpoint(state, self.checkpoints / name)
        except CheckpointWriteError as e:
            raise TrainError(str(e)) from e


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then move it into place."""
    tmp = None
    try:
        fd, tmp = create_beside(path)  # the mode open() gives under the umask, not mkstemp's 0o600
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        raise TrainError(f"cannot write {str(path)!r} (is the disk full or read-only?): {e.strerror or e}") from e
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def resumed_run(config: RunConfig, state: dict) -> dict:
    """The checkpoint's run definition, once ``config`` is found to agree with it."""
    try:
        RunConfig.from_run(state["run"]).resolved()  # the checkpoint's side alone, so an error blames it
    except (KeyError, TypeError, ValueError) as e:
        raise TrainError(f"cannot resume: checkpoint {state['path']!r} holds an invalid run definition: "
                         f"{describe_error(e)}") from e
    conflicts = config.conflicts(state["run"])
    if conflicts:
        raise TrainError(
            f"cannot resume: {len(conflicts)} option(s) differ from the run in checkpoint {state['path']!r}: "
            f"{'; '.join(conflicts)}. A resumed run keeps the options that define it: leave these out on the "
            f"command line (from Python: RunConfig.from_run(checkpoint['run'], ...)) or start a new run in another "
            f"output directory; only these may change on resume: {', '.join(RESUMABLE)}"
        )
    return dict(state["run"])


def resumed_config(config: RunConfig, state: dict) -> RunConfig:
    """``config`` with the checkpoint's intervals for those it leaves out (``KEPT_ON_RESUME``)."""
    try:
        return config.resumed_with(state.get("intervals", {}))
    except (TypeError, ValueError) as e:
        raise TrainError(f"cannot resume: checkpoint {state['path']!r} holds invalid intervals: "
                         f"{describe_error(e)}") from e
