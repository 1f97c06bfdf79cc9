"""Where one training step's time goes: PyTorch's profiler on one step of ours and of
PyTorch's ``nn.Transformer`` (same weights, same batch, same step as ``bench_gpu.py``).

    python benchmarks/profile_step.py                          # CUDA: base, bf16 autocast, dropout 0.1
    python benchmarks/profile_step.py --size big --dropout 0
    python benchmarks/profile_step.py --compile whole          # the step under torch.compile
    python benchmarks/profile_step.py --device cpu --tiny      # a smoke test
    python benchmarks/profile_step.py --out DIR                # also write the full tables to DIR

For each model it prints the step's wall time, the kernels' total time on the device, the
number of kernel launches and of host-device synchronisations (``aten::_local_scalar_dense``,
a tensor read into Python), then the top operators by time on the device (on the CPU: by
their own CPU time).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_gpu  # noqa: E402


def summary(prof, wall_s: float, device) -> dict:
    """Totals read off the profiler's events."""
    kernels, device_us, syncs = 0, 0.0, 0
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels += 1
            device_us += event.self_device_time_total
        elif event.name == "aten::_local_scalar_dense":
            syncs += 1
    return {"wall_ms": wall_s * 1e3, "device_ms": device_us / 1e3, "kernels": kernels, "syncs": syncs,
            "device": str(device)}


def profile_one(name: str, step, device, top: int, out: Path | None) -> dict:
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    bench_gpu.sync(device)
    with profile(activities=activities) as prof:
        start = time.perf_counter()
        step()
        bench_gpu.sync(device)
        wall = time.perf_counter() - start
    totals = summary(prof, wall, device)
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    averages = prof.key_averages()
    text = averages.table(sort_by=sort, row_limit=top, max_name_column_width=60)
    print(f"\n== {name}: step {totals['wall_ms']:.1f} ms wall, {totals['device_ms']:.1f} ms in "
          f"{totals['kernels']} kernels, {totals['syncs']} host syncs (aten::_local_scalar_dense) ==")
    print(text)
    if out is not None:
        (out / f"profile_{name}.txt").write_text(
            f"{totals}\n\n{text}\n\nby CPU time:\n"
            f"{averages.table(sort_by='cpu_time_total', row_limit=top, max_name_column_width=60)}\n")
    return totals


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", default="base", help="a size of bench_gpu.py's eager rows (cuda: base, big)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (a smoke test)")
    parser.add_argument("--precision", default="bf16", choices=bench_gpu.PRECISIONS)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--compile", default=None, choices=bench_gpu.COMPILE_MODES,
                        help="profile the step compiled: each layer on its own, or the whole step")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--top", type=int, default=25, help="operators listed per model")
    parser.add_argument("--out", type=Path, default=None, help="folder for the full tables")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    kind = "tiny" if args.tiny else device.type
    sizes = {s.name: s for s in bench_gpu.SIZES[kind][0]}
    if not args.tiny and args.size not in sizes:
        parser.error(f"--size must be one of {tuple(sizes)} on {kind}, got {args.size!r}")
    size = next(iter(sizes.values())) if args.tiny else sizes[args.size]
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    print(f"torch {torch.__version__}, {bench_gpu.device_name(device)}; {size.label}, {args.precision}, "
          f"dropout {args.dropout}, {'compiled (' + args.compile + ')' if args.compile else 'eager'}", flush=True)
    torch.manual_seed(0)
    ours, theirs = bench_gpu.build_pair(size, args.dropout, device)
    batch = bench_gpu.make_batch(size, device)
    results = {}
    for name, model in (("ours", ours), ("pytorch", theirs)):
        step = bench_gpu.make_step(model, batch, args.precision, device, args.compile)
        for _ in range(args.warmup):
            step()
        results[name] = profile_one(name, step, device, args.top, args.out)
    a, b = results["ours"], results["pytorch"]
    print(f"\nours / PyTorch: wall {a['wall_ms'] / b['wall_ms']:.2f}, device time "
          f"{a['device_ms'] / max(b['device_ms'], 1e-9):.2f}, kernels {a['kernels']} / {b['kernels']}, "
          f"syncs {a['syncs']} / {b['syncs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
