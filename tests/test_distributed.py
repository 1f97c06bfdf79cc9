"""DistributedDataParallel with gloo on 2 CPU processes trains the same model as one process
with the same global batch (Section 5.2: the paper split each batch over 8 GPUs).

With R ranks, global step k is ``sampler.all_batches()[k*R:(k+1)*R]``; each rank's loss is
normalised by the global number of target tokens times R, so DDP's gradient average equals
the single-process gradient of the union. Dropout is 0 so both runs are deterministic.
The Adam set-up is the same code path (``train_step``); the CLI runs it under ``torchrun``.
"""

import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

import transformer_lab as tl

WORLD, STEPS = 2, 3


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
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
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
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_gloo_processes_train_the_same_model_as_one(tmp_path):
    path = str(tmp_path / "rank0.pt")
    mp.spawn(worker, args=(free_port(), path), nprocs=WORLD, join=True)
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
