"""Checkpoints: atomic save, load with clear errors, resume, and averaging (Section 6.1).

"For the base models, we used a single model obtained by averaging the last 5 checkpoints,
which were written at 10-minute intervals. For the big models, we averaged the last 20
checkpoints." (Section 6.1 of Vaswani et al., 2017.)

A checkpoint is one ``torch.save`` file holding a dict with the model, optimiser and
scheduler state, the step, the model config, both vocabularies, the RNG states and the
sampler's epoch and position: everything needed to continue a run exactly. Files are
written to a temporary name in the same directory (with the mode ``open`` gives under the
umask, see ``atomic_files``) and moved into place with ``os.replace``, so a crash or
Ctrl-C never leaves a half-written checkpoint under the real name. Files are named ``step_00001234.pt`` inside a run's ``checkpoints/`` folder.

Each checkpoint carries a SHA-256 digest of its contents (every tensor's bytes, dtype and
shape, and every other value, in order), checked on load: bytes flipped on disk inside a
tensor's data raise :class:`CheckpointError` naming the file instead of loading wrong
weights. Checkpoints of format 1 (written before the digest existed) still load, with a
warning that they cannot be verified. Loading is ``weights_only``: a file holding other
Python objects is refused without running any of its code.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import random
import re
import warnings
import zipfile
from pathlib import Path
from typing import Iterator

import torch

from . import checks
from .atomic_files import create_beside

FORMAT = "transformer_lab.checkpoint/2"
UNVERIFIED_FORMAT = "transformer_lab.checkpoint/1"  # the same, without the digest
DIGEST_KEY = "sha256"
REQUIRED_KEYS = ("format", "step", "model", "config", "src_vocab", "tgt_vocab")
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NAME = re.compile(r"^step_(\d+)\.pt$")
AVERAGED_NAME = "averaged.pt"


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable or not a transformer_lab checkpoint."""


class CheckpointWriteError(OSError):
    """A checkpoint that could not be written (a full disk, a read-only directory)."""


def checkpoint_name(step: int) -> str:
    return f"step_{step:08d}.pt"


def describe_error(error: BaseException, limit: int = 300) -> str:
    """``error`` as one short line: its type and first sentence, terminal escape codes
    removed (torch's messages carry bold text and paragraphs of advice)."""
    text = " ".join(_ESCAPES.sub("", str(error)).split())
    if len(text) > limit:
        first = text.split(". ")[0]
        text = first if len(first) <= limit else text[: limit - 3] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def payload_digest(state: dict) -> str:
    """SHA-256 of a checkpoint's contents: every value in order, tensors by dtype, shape
    and bytes. The digest itself and the ``path`` that loading adds are left out."""
    h = hashlib.sha256()
    _feed(h, {k: v for k, v in state.items() if k not in (DIGEST_KEY, "path")})
    return h.hexdigest()


def _feed(h, value) -> None:
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"tensor {t.dtype} {tuple(t.shape)};".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())  # (numel * itemsize,) raw bytes
    elif isinstance(value, dict):
        h.update(f"dict {len(value)};".encode())
        for key, item in value.items():
            _feed(h, key)
            _feed(h, item)
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__} {len(value)};".encode())
        for item in value:
            _feed(h, item)
    else:  # str, int, float, bool, None: repr is exact for each
        h.update(f"{type(value).__name__} {value!r};".encode())


def save_checkpoint(state: dict, path: str | os.PathLike) -> Path:
    """Write ``state`` to ``path`` atomically (temporary file, fsync, ``os.replace``), with
    the digest of its contents. A failed write (a full disk: torch reports "unexpected
    pos") raises :class:`CheckpointWriteError` naming the file and leaves no temporary behind."""
    path = Path(path)
    missing = [k for k in REQUIRED_KEYS if k != "format" and k not in state]
    if missing:
        raise ValueError(f"state is missing checkpoint key(s) {', '.join(missing)}")
    payload = {"format": FORMAT, **{k: v for k, v in state.items() if k not in (DIGEST_KEY, "path")}}
    payload[DIGEST_KEY] = payload_digest(payload)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = create_beside(path)  # the mode open() gives, not mkstemp's 0o600
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:  # torch's writer raises RuntimeError for OS errors
        raise CheckpointWriteError(f"cannot write checkpoint {str(path)!r} (is the disk full or read-only?): "
                                   f"{describe_error(e)}") from e
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def list_checkpoints(directory: str | os.PathLike) -> list[Path]:
    """The ``step_*.pt`` files in ``directory``, oldest step first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def resolve_checkpoint(path: str | os.PathLike, prefer_averaged: bool = False) -> Path:
    """A checkpoint file from a file name, a ``checkpoints/`` folder or a run's output dir.

    In a folder, the latest step wins, or ``averaged.pt`` with ``prefer_averaged``.
    Raises :class:`CheckpointError` when there is none.
    """
    path = Path(path)
    if path.is_file():
        return path
    if not path.exists():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    for folder in (path / "checkpoints", path):
        if prefer_averaged and (folder / AVERAGED_NAME).is_file():
            return folder / AVERAGED_NAME
        found = list_checkpoints(folder)
        if found:
            return found[-1]
        if (folder / AVERAGED_NAME).is_file():
            return folder / AVERAGED_NAME
    raise CheckpointError(f"no checkpoint (step_*.pt or {AVERAGED_NAME}) found in {str(path)!r}")


def load_checkpoint(path: str | os.PathLike, map_location="cpu") -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (``weights_only`` loading) and
    verify its digest.

    A missing file, a truncated or corrupt one (its digest does not match), or a file
    that is not a transformer_lab checkpoint raises :class:`CheckpointError` naming the
    path, in one line.
    """
    path = resolve_checkpoint(path)
    state = _read(path, map_location)
    if not isinstance(state, dict) or state.get("format") not in (FORMAT, UNVERIFIED_FORMAT):
        raise CheckpointError(f"{str(path)!r} is not a transformer_lab checkpoint (expected format {FORMAT!r})")
    missing = [k for k in REQUIRED_KEYS if k not in state]
    if missing:
        raise CheckpointError(f"checkpoint {str(path)!r} lacks key(s) {', '.join(missing)}")
    if state["format"] == UNVERIFIED_FORMAT:
        warnings.warn(f"checkpoint {str(path)!r} was written before checkpoints carried a digest "
                      f"({UNVERIFIED_FORMAT!r}): its contents cannot be verified", stacklevel=2)
    elif state.get(DIGEST_KEY) != payload_digest(state):
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt: its contents do not match the SHA-256 "
                              f"digest stored in it (damaged after it was written)")
    state.pop(DIGEST_KEY, None)
    state["path"] = str(path)
    return state


def _read(path: Path, map_location) -> object:
    """``torch.load(path, weights_only=True)`` with its many failures turned into one
    :class:`CheckpointError` each."""
    if not zipfile.is_zipfile(path):
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or unreadable: not a complete zip archive "
                              f"as torch.save writes (truncated, or another kind of file)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about pickle protocols before failing
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as e:
        if "weights only" not in str(e).lower():
            raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or unreadable: {describe_error(e)}") from e
        raise CheckpointError(
            f"{str(path)!r} is not a checkpoint this package wrote: it holds Python objects other than "
            f"tensors, numbers, strings and containers, and was refused without running any of its code"
        ) from None
    except Exception as e:  # torch raises many types for damaged files
        raise CheckpointError(f"checkpoint {str(path)!r} is corrupt or unreadable: {describe_error(e)}") from e


def prune_checkpoints(directory: str | os.PathLike, keep: int) -> None:
    """Delete all but the newest ``keep`` step checkpoints in ``directory``."""
    checks.positive_int("keep", keep)
    for p in list_checkpoints(directory)[:-keep]:
        p.unlink(missing_ok=True)


def average_state_dicts(state_dicts: list[dict]) -> dict:
    """Element-wise mean of model state dicts (Section 6.1's checkpoint averaging).

    Floating-point tensors are averaged (in float64, then cast back); others (integer
    buffers) are taken from the last state dict. All must have the same keys and shapes.
    """
    if not state_dicts:
        raise ValueError("state_dicts must hold at least one state dict")
    keys = list(state_dicts[-1])
    for i, sd in enumerate(state_dicts):
        if list(sd) != keys:
            raise ValueError(f"state dict {i} has different keys from the last one")
    out = {}
    for key in keys:
        tensors = [sd[key] for sd in state_dicts]
        if any(t.shape != tensors[-1].shape for t in tensors):
            raise ValueError(f"parameter {key!r} has different shapes across state dicts")
        if tensors[-1].is_floating_point():
            out[key] = (sum(t.double() for t in tensors) / len(tensors)).to(tensors[-1].dtype)
        else:
            out[key] = tensors[-1].clone()
    return out


def average_checkpoints(paths: list[str | os.PathLike]) -> dict:
    """A checkpoint whose model is the mean of ``paths``' models; the rest (config,
    vocabularies, step) comes from the last. Optimiser and scheduler state are dropped:
    an averaged model is for evaluation and translation, not for resuming."""
    if not paths:
        raise ValueError("paths must name at least one checkpoint")
    states = [load_checkpoint(p) for p in paths]
    last = states[-1]
    for p, s in zip(paths, states):
        if s["config"] != last["config"]:
            raise CheckpointError(f"checkpoint {str(p)!r} has a different model config from {str(paths[-1])!r}")
    averaged = {k: v for k, v in last.items()
                if k not in ("optimizer", "scheduler", "rng", "sampler", "intervals", "path")}
    averaged["model"] = average_state_dicts([s["model"] for s in states])
    averaged["averaged_steps"] = [int(s["step"]) for s in states]
    return averaged


# --------------------------------------------------------------------------- RNG states


def rng_state() -> dict:
    """Python's and PyTorch's generator states (CPU, and every CUDA device if present)."""
    state = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@contextlib.contextmanager
def rng_kept() -> Iterator[None]:
    """Run the block, then put every generator of :func:`rng_state` back as it was
    before: what the block draws (a ``DataLoader`` draws a seed each time it is iterated)
    leaves the training stream, and so dropout, as if the block had not run."""
    state = rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
