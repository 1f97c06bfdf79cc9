"""DistributedDataParallel with gloo on 2 CPU processes trains the same model as one process
with the same global batch (Section 5.2: the paper split each batch over 8 GPUs).

With R ranks, global step k is ``sampler.all_batches()[k*R:(k+1)*R]``; each rank's loss is
normalised by the global number of target tokens times R, so DDP's gradient average equals
the single-process gradient of the union. Dropout is 0 so both runs are deterministic.
The Adam set-up is the same code path (``train_step``); the CLI runs it under ``torchrun``.
"""

import faulthandler
import os
import socket
import sys
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

import transformer_lab as tl
from transformer_lab.distributed import DistInfo, gloo_loopback_if_single_node, init_distributed, shutdown_distributed

WORLD, STEPS = 2, 3
# Two ranks train 3 tiny steps in about 10 s; past this the test kills them and fails,
# with each rank's stacks (faulthandler) in the output, rather than holding the suite.
DEADLINE_S = 300


def setup(seed=0):
    loaders = tl.make_loaders("reverse", seed=seed, max_tokens=96, num_train=200, num_validation=10, num_test=10)
    config = tl.TransformerConfig.tiny(len(loaders.src_vocab), d_model=16, num_heads=2, d_ff=32, num_layers=1,
                                       dropout=0.0)
    torch.manual_seed(seed)
    model = tl.Transformer(config)
    # SGD, whose update is linear in the gradient: Adam's first steps move every weight by
    # about lr * sign(g), which turns rounding noise in near-zero gradients into lr-sized gaps.
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = tl.WarmupSchedule(optimizer, config.d_model, warmup_steps=2)
    dataset = loaders.train.dataset
    batches = loaders.train.batch_sampler.all_batches()
    return model, optimizer, scheduler, dataset, batches


def worker(rank, port, path):
    faulthandler.dump_traceback_later(DEADLINE_S - 30, exit=False, file=sys.stderr)
    # what torchrun sets, so the ranks join through the CLI's own path (init_distributed)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE=str(WORLD), LOCAL_WORLD_SIZE=str(WORLD))
    init_distributed(DistInfo(rank, WORLD, rank), torch.device("cpu"))
    torch.set_num_threads(1)
    model, optimizer, scheduler, dataset, batches = setup()
    ddp = DistributedDataParallel(model)
    loss_fn = tl.LabelSmoothingLoss(0.1)
    for k in range(STEPS):
        batch = tl.collate([dataset[i] for i in batches[k * WORLD + rank]])
        tokens = torch.tensor([batch.tgt_tokens])
        dist.all_reduce(tokens)
        tl.train_step(ddp, batch, loss_fn, optimizer, scheduler, global_tokens=int(tokens), world_size=WORLD)
    if rank == 0:
        torch.save(model.state_dict(), path)
    del ddp  # the wrapper goes before the group (see shutdown_distributed)
    shutdown_distributed()
    faulthandler.cancel_dump_traceback_later()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_train_the_same_model_as_one(tmp_path):
    path = str(tmp_path / "rank0.pt")
    context = mp.start_processes(worker, args=(free_port(), path), nprocs=WORLD, join=False, start_method="spawn")
    deadline = time.monotonic() + DEADLINE_S
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"the {WORLD} gloo ranks did not finish within {DEADLINE_S} s; killed (stacks above)")
    distributed = torch.load(path, weights_only=True)

    model, optimizer, scheduler, dataset, batches = setup()
    loss_fn = tl.LabelSmoothingLoss(0.1)
    for k in range(STEPS):
        micro = [tl.collate([dataset[i] for i in b]) for b in batches[k * WORLD:(k + 1) * WORLD]]
        tl.train_step(model, micro, loss_fn, optimizer, scheduler)
    moved = 0
    for name, value in model.state_dict().items():
        torch.testing.assert_close(distributed[name], value, rtol=1e-3, atol=1e-4)
        moved += not torch.equal(value, setup()[0].state_dict()[name])
    assert moved > 0  # the runs did train


def test_one_machine_talks_over_the_loopback_unless_told_otherwise():
    env = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
    assert gloo_loopback_if_single_node(env) and env["GLOO_SOCKET_IFNAME"] == "lo"
    chosen = {"WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "GLOO_SOCKET_IFNAME": "eth1"}
    assert not gloo_loopback_if_single_node(chosen) and chosen["GLOO_SOCKET_IFNAME"] == "eth1"
    two_machines = {"WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}
    assert not gloo_loopback_if_single_node(two_machines) and "GLOO_SOCKET_IFNAME" not in two_machines
    plain = {}
    assert not gloo_loopback_if_single_node(plain) and plain == {}
