"""Devices and data-parallel training with ``torchrun`` (DistributedDataParallel).

The paper trained on one machine with 8 P100 GPUs (Section 5.2) on batches of about 25,000
source and 25,000 target tokens (Section 5.1), without saying whether that is the total or
each GPU's share. Here every process draws whole batches of its own of up to ``max_tokens``
(:class:`~transformer_lab.data.TokenBatchSampler`), so one update on R processes reads R
batches. ``torchrun`` sets the
environment variables ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``;
:func:`init_distributed` reads them and joins the process group with NCCL on GPUs and
gloo on CPUs. Without them, training is one ordinary process.
"""

from __future__ import annotations

import datetime
import gc
import os
import warnings
from dataclasses import dataclass

import torch
import torch.distributed as dist

from . import checks

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def _mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def resolve_device(name: str = "auto", local_rank: int = 0) -> torch.device:
    """``auto`` picks CUDA, then MPS (Apple), then the CPU. A named device that this
    machine lacks is a ValueError that says what is available."""
    checks.one_of("device", name, DEVICE_CHOICES)
    available = ["cpu"] + (["cuda"] if torch.cuda.is_available() else []) + (["mps"] if _mps_available() else [])
    if name == "auto":
        name = "cuda" if "cuda" in available else "mps" if "mps" in available else "cpu"
    if name not in available:
        raise ValueError(
            f"device {name!r} was requested but is not available on this machine; available: {', '.join(available)}"
        )
    if name == "cuda":
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device(name)


@dataclass(frozen=True)
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def env_dist_info() -> DistInfo:
    """Rank, world size and local rank from ``torchrun``'s environment (1 process if unset)."""
    return DistInfo(
        int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))
    )


# How long joining the group, and any one collective, may wait for the other ranks before
# raising (PyTorch's default is 30 minutes; a rank that died should not hold the rest that long).
INIT_TIMEOUT = datetime.timedelta(minutes=10)


def gloo_loopback_if_single_node(environ=os.environ) -> bool:
    """On one machine, gloo's ranks talk over the loopback interface.

    gloo picks its network interface from the host name; on a host whose name resolves to an
    address it cannot reach, connecting hangs. When every rank is on this machine
    (``LOCAL_WORLD_SIZE == WORLD_SIZE``, as ``torchrun`` sets them) and the user has not chosen
    an interface, ``GLOO_SOCKET_IFNAME=lo`` is set. Returns whether it was set."""
    if "GLOO_SOCKET_IFNAME" in environ:
        return False
    world, local = environ.get("WORLD_SIZE"), environ.get("LOCAL_WORLD_SIZE")
    if world is None or local is None or world != local:
        return False
    environ["GLOO_SOCKET_IFNAME"] = "lo"
    return True


def init_distributed(info: DistInfo, device: torch.device) -> None:
    """Join the process group (NCCL for CUDA, gloo otherwise) when ``world_size > 1``.
    ``MASTER_ADDR``/``MASTER_PORT`` come from the environment (``torchrun`` sets them).
    Joining, and each collective after it, raises after :data:`INIT_TIMEOUT`."""
    if not info.enabled or dist.is_initialized():
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        gloo_loopback_if_single_node()
    dist.init_process_group(backend, rank=info.rank, world_size=info.world_size, timeout=INIT_TIMEOUT)


def shutdown_distributed() -> None:
    """Leave the process group. Call it after every DistributedDataParallel wrapper is gone:
    a wrapper destroyed after the group (its reducer still holds the group's work) can hang
    the process at exit, intermittently (measured: 3 hangs in 24 two-rank runs; none in 30
    once the wrapper was released first). :func:`shutdown_distributed` collects garbage first
    so a wrapper the caller dropped is really gone."""
    if dist.is_available() and dist.is_initialized():
        gc.collect()
        dist.destroy_process_group()


def all_reduce_sum(value: int | float, device: torch.device) -> float:
    """Sum a number over all ranks (itself when not distributed)."""
    if not (dist.is_available() and dist.is_initialized()):
        return value
    t = torch.tensor([float(value)], dtype=torch.float64 if device.type != "mps" else torch.float32, device=device)
    dist.all_reduce(t)
    return t.item()


def barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def default_threads(preset: str, device: torch.device) -> int | None:
    """The threads a run uses when ``threads`` is not given: 1 for the ``tiny`` preset on
    the CPU, else ``None`` (PyTorch's own choice, one per core). A tiny model's matrices
    (d_model 64) are too small to share between cores, and a thread that waits for a busy
    core stalls every step: on our 2-core machine, shared with other work, the dates task
    made 201-236 updates in 15 s on one thread and 7-9 on two (README: "Training and
    translating")."""
    return 1 if preset == "tiny" and torch.device(device).type == "cpu" else None


def usable_threads(threads: int) -> int:
    """``threads``, or the number of CPU cores this process may run on if that is fewer
    (with a RuntimeWarning naming both): more threads than cores only wait for each other."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if threads <= cores:
        return threads
    warnings.warn(f"threads={threads} is more than the {cores} CPU core(s) available to this process; using "
                  f"{cores} (more threads than cores slow every step down)", RuntimeWarning, stacklevel=3)
    return cores
