"""Training-step speed of transformer_lab against PyTorch's ``nn.Transformer`` on a GPU (or
the CPU): eager and compiled, float32 / TF32 / bfloat16, base and big sizes.

    python benchmarks/bench_gpu.py                       # CUDA when present: about 4 minutes
    python benchmarks/bench_gpu.py --device cpu          # the CPU, at smaller sizes
    python benchmarks/bench_gpu.py --tiny                # a smoke test at toy sizes (seconds)
    python benchmarks/bench_gpu.py --json out.json       # also write every row as JSON

What it does, in order:

1. **Same loss first.** For each size it copies our weights into PyTorch's model (the same
   embeddings, positions and output layer around ``nn.Transformer``, see ``TorchSeq2Seq`` in
   ``bench_speed.py``) and checks that the two give the same label-smoothed loss in float32
   on a batch with padding; a mismatch stops the script before any timing.
2. **The ceiling.** The rate of one large matrix product at each precision (8192^3 on a GPU,
   1024^3 on the CPU), measured in this run on this device: what "share of the ceiling"
   divides by.
3. **Eager rows.** One training step (forward, label-smoothed loss, backward, Adam) of ours
   and of PyTorch's, interleaved round by round (who goes first alternates), at float32,
   TF32 and bfloat16 autocast, dropout 0.1 (both sides drop the same places: embeddings,
   attention weights, feed-forward activations, sub-layer outputs), and bfloat16 with
   dropout 0 as well.
4. **Compiled rows.** The same step with the forward pass and the loss under
   ``torch.compile`` (ours with ``fullgraph=True``: no graph break), bfloat16, at the
   paper's batch size on a GPU (about 25,000 source and 25,000 target tokens, Section 5.1).

The table gives medians over the rounds: ours / PyTorch (below 1.0: ours is faster) with
the range of the per-round ratios, our matrix-product FLOP rate (forward and backward,
counted as 3x the forward's products) and its share of the ceiling, target tokens per
second of both, and each step's peak memory on a GPU (the step's own peak plus the model's
parameters and optimiser state).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import transformer_lab as tl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_speed  # noqa: E402  (TorchSeq2Seq: nn.Transformer with our embeddings, positions and output)

TorchSeq2Seq, training_flops, device_name = bench_speed.TorchSeq2Seq, bench_speed.training_flops, bench_speed.device_name

PRECISIONS = ("fp32", "tf32", "bf16")


@dataclasses.dataclass(frozen=True)
class Size:
    """One model and batch: ``model`` names a :class:`tl.TransformerConfig` preset or gives its
    sizes; ``batch`` sentence pairs of ``length`` source and ``length`` target tokens."""

    name: str
    batch: int
    length: int
    vocab: int
    model: dict

    def config(self, dropout: float) -> tl.TransformerConfig:
        return tl.TransformerConfig(self.vocab, self.vocab, shared_vocab=True, max_len=max(self.length, 16),
                                    dropout=dropout, attention_dropout=dropout, activation_dropout=dropout,
                                    **self.model)

    def with_batch(self, batch: int) -> "Size":
        return dataclasses.replace(self, batch=batch)

    @property
    def label(self) -> str:
        return f"{self.name}, {self.batch}x{self.length}"


BASE = dict(d_model=512, num_heads=8, d_ff=2048, num_layers=6)  # Table 3, base
BIG = dict(d_model=1024, num_heads=16, d_ff=4096, num_layers=6)  # Table 3, big
SMALL = dict(d_model=256, num_heads=4, d_ff=1024, num_layers=3)  # bench_speed.py's encoder-decoder
TINY = dict(d_model=32, num_heads=2, d_ff=64, num_layers=2)

#: device kind -> (the eager rows' sizes, the compiled rows' sizes)
SIZES = {
    # The sizes for the eager rows; 196 x 128 = 25,088 tokens a side for the compiled
    # rows, Section 5.1's "approximately 25000 source tokens and 25000 target tokens".
    "cuda": ([Size("base", 64, 128, 32000, BASE), Size("big", 32, 128, 32000, BIG)],
             [Size("base", 196, 128, 32000, BASE), Size("big", 196, 128, 32000, BIG)]),
    "cpu": ([Size("small", 32, 64, 1000, SMALL), Size("base", 8, 32, 8000, BASE)],
            [Size("small", 32, 64, 1000, SMALL)]),
    "tiny": ([Size("tiny", 4, 12, 50, TINY)], [Size("tiny", 4, 12, 50, TINY)]),
}
ROUNDS = {"cuda": 10, "cpu": 5, "tiny": 2}
#: what a row is expected to take on a GPU, compiling included (--budget skips rows that would overrun)
ROW_SECONDS = {None: 10, "layers": 50, "whole": 110}
WARMUP = {"cuda": 3, "cpu": 1, "tiny": 1}


# -- the two models, with the same weights ---------------------------------------------


def copy_into_torch_seq2seq(ours: tl.Transformer, theirs: TorchSeq2Seq) -> TorchSeq2Seq:
    """Copy every weight of ``ours`` (post-LN, shared vocabulary, tied embeddings) into
    ``theirs`` and return it: the two then compute the same function."""
    from transformer_lab.interop import copy_into_torch_attention

    with torch.no_grad():
        theirs.embed.weight.copy_(ours.tgt_embed.weight)  # also the output layer's (tied)
        theirs.output.bias.copy_(ours.output_projection.bias)
        pairs = [*zip(ours.encoder.layers, theirs.transformer.encoder.layers),
                 *zip(ours.decoder.layers, theirs.transformer.decoder.layers)]
        for mine, ref in pairs:
            copy_into_torch_attention(mine.self_attn, ref.self_attn)
            if hasattr(ref, "multihead_attn"):
                copy_into_torch_attention(mine.cross_attn, ref.multihead_attn)
            ref.linear1.load_state_dict(mine.feed_forward.w_1.state_dict())
            ref.linear2.load_state_dict(mine.feed_forward.w_2.state_dict())
            for i in (1, 2, 3):
                if hasattr(ref, f"norm{i}"):
                    getattr(ref, f"norm{i}").load_state_dict(getattr(mine, f"norm{i}").state_dict())
    return theirs


def build_pair(size: Size, dropout: float, device) -> tuple[tl.Transformer, TorchSeq2Seq]:
    """Ours and PyTorch's at ``size``, with the same weights, built on ``device``."""
    config = size.config(dropout)
    with torch.device(device):  # initialise on the GPU: seconds less per big model
        ours = tl.Transformer(config).train()
        theirs = copy_into_torch_seq2seq(ours, TorchSeq2Seq(config)).train()
    return ours, theirs


def make_batch(size: Size, device, padding: bool = False, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """src (B, L) and tgt (B, L + 1) token ids in [4, vocab); with ``padding`` the odd rows
    end with a quarter of pad tokens (id 0)."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, size.vocab, (size.batch, size.length), generator=g)
    tgt = torch.randint(4, size.vocab, (size.batch, size.length + 1), generator=g)
    if padding:
        cut = max(1, size.length // 4)
        src[1::2, -cut:] = 0
        tgt[1::2, -cut:] = 0
    return src.to(device), tgt.to(device)


@contextlib.contextmanager
def precision(name: str, device):
    """fp32: full float32 products; tf32: float32 with TF32 products (CUDA); bf16: autocast."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if name == "tf32" else "highest")
    try:
        if name == "bf16":
            with torch.autocast(device.type, torch.bfloat16):
                yield
        else:
            yield
    finally:
        torch.set_float32_matmul_precision(before)


def make_optimizer(model: nn.Module, device) -> torch.optim.Adam:
    fused = device.type == "cuda"  # one kernel launch for all parameters
    return torch.optim.Adam(model.parameters(), lr=1e-5, betas=(0.9, 0.98), eps=1e-9, fused=fused)


COMPILE_MODES = ("layers", "whole")


def stack_layers(model: nn.Module) -> list[nn.Module]:
    """Every encoder and decoder layer of ours or of PyTorch's."""
    stacks = model.transformer if isinstance(model, TorchSeq2Seq) else model
    return [*stacks.encoder.layers, *stacks.decoder.layers]


def _layer_forward(layer: nn.Module, *args, **kwargs):
    """A layer's own forward, called from a frame of ours: torch.compile skips frames of
    torch.nn's files (``nn.TransformerEncoderLayer.compile()`` would run it eagerly) but
    traces into them from here. Identical layers share one compiled graph."""
    return type(layer).forward(layer, *args, **kwargs)


def make_step(model: nn.Module, batch, prec: str, device, compile: str | None = None):
    """One training step of ``model`` on ``batch`` as a function returning the loss tensor.

    ``compile``: None (eager); ``"whole"``, the forward pass and the loss as one
    ``torch.compile``d graph (ours with ``fullgraph=True``: no graph break); ``"layers"``,
    each encoder and decoder layer compiled on its own (identical layers share one
    compilation: about a sixth of the compile time) and the loss compiled, with the
    embeddings and the output projection left eager. Both sides get the same treatment.
    """
    src, tgt = batch
    tgt_in, tgt_out = tgt[:, :-1], tgt[:, 1:]
    loss_fn = tl.LabelSmoothingLoss(0.1, ignore_index=0)
    opt = make_optimizer(model, device)
    ours = isinstance(model, tl.Transformer)

    def forward_loss(src, tgt_in, tgt_out):
        return loss_fn(model(src, tgt_in), tgt_out)

    if compile == "whole":
        forward_loss = torch.compile(forward_loss, fullgraph=ours, dynamic=False)
    elif compile == "layers":
        compiled = torch.compile(_layer_forward, fullgraph=ours, dynamic=False)
        for layer in stack_layers(model):
            layer.forward = functools.partial(compiled, layer)
        loss_fn = torch.compile(loss_fn, fullgraph=True, dynamic=False)
    elif compile is not None:
        raise ValueError(f"compile must be None or one of {COMPILE_MODES}, got {compile!r}")

    def step():
        opt.zero_grad(set_to_none=True)
        with precision(prec, device):
            loss = forward_loss(src, tgt_in, tgt_out)
        loss.backward()
        opt.step()
        return loss

    step.optimizer = opt
    return step


# -- timing ----------------------------------------------------------------------------


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device) -> float:
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def interleaved(ours, theirs, rounds: int, device, warmup: int) -> dict:
    """Seconds of each per round, interleaved (who goes first alternates)."""
    for _ in range(warmup):
        ours(), theirs()
    a, b = [], []
    for i in range(rounds):
        if i % 2:
            tb, ta = timed(theirs, device), timed(ours, device)
        else:
            ta, tb = timed(ours, device), timed(theirs, device)
        a.append(ta), b.append(tb)
    ratios = [x / y for x, y in zip(a, b)]
    return {"ours_s": statistics.median(a), "pytorch_s": statistics.median(b),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}


def matmul_ceiling(prec: str, device, n: int | None = None, repeats: int = 10) -> float:
    """FLOP/s of one n^3 matrix product at ``prec`` (bf16: bfloat16 operands), best of
    ``repeats`` after warming up: the ceiling the rows' shares divide by."""
    n = n or (8192 if device.type == "cuda" else 1024)
    dtype = torch.bfloat16 if prec == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    with precision("tf32" if prec == "tf32" else "fp32", device):
        for _ in range(3):
            a @ b
        best = min(timed(lambda: a @ b, device) for _ in range(repeats))
    return 2 * n**3 / best


def peak_memory(step, model: nn.Module, device) -> float | None:
    """Bytes one step needs: its peak above what was allocated before it, plus the model's
    parameters and optimiser state (the other model's stay out of the count)."""
    if device.type != "cuda":
        return None
    sync(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    step()
    sync(device)
    peak = torch.cuda.max_memory_allocated(device) - before
    state = [t for s in step.optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    resident = sum(t.numel() * t.element_size() for t in [*model.parameters(), *state])
    return float(peak + resident)


def loss_check(size: Size, device) -> dict:
    """Both models' float32 loss on one padded batch, same weights, dropout 0: must agree."""
    ours, theirs = build_pair(size.with_batch(min(size.batch, 8)), 0.0, device)
    batch = make_batch(size.with_batch(min(size.batch, 8)), device, padding=True, seed=1)
    loss_fn = tl.LabelSmoothingLoss(0.1, ignore_index=0)
    src, tgt = batch
    with torch.no_grad(), precision("fp32", device):
        a = float(loss_fn(ours(src, tgt[:, :-1]), tgt[:, 1:]))
        b = float(loss_fn(theirs(src, tgt[:, :-1]), tgt[:, 1:]))
    ok = abs(a - b) <= 1e-4 * max(1.0, abs(b))
    return {"size": size.name, "ours": a, "pytorch": b, "same": ok}


# -- the rows --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Row:
    size: Size
    precision: str
    dropout: float
    compile: str | None = None  # None (eager), "layers" or "whole"

    @property
    def mode(self) -> str:
        return "eager" if self.compile is None else f"compiled ({self.compile})"


def plan(kind: str, device, args) -> list[Row]:
    """Every row, in the order they run: bf16 first (the comparison that matters most),
    then the compiled rows, then fp32 and TF32."""
    eager_sizes, compiled_sizes = SIZES[kind]
    precisions = [p for p in args.precisions if device.type == "cuda" or p != "tf32"]  # TF32 is CUDA's
    rows = []
    if "eager" in args.modes and "bf16" in precisions:
        rows += [Row(size, "bf16", p) for size in eager_sizes for p in (0.1, 0.0)]
    if "compiled" in args.modes:
        rows += [Row(size, "bf16", 0.1, args.compile) for size in compiled_sizes]
    if "eager" in args.modes:
        rows += [Row(size, prec, 0.1) for size in eager_sizes for prec in precisions if prec != "bf16"]
    if "compiled" in args.modes and args.whole_graph_too and args.compile != "whole":
        rows += [Row(compiled_sizes[0], "bf16", 0.1, "whole")]
    return rows


class Pairs:
    """The two models of each (size, dropout), built once and shared by the eager rows
    (rows of other precisions keep training the same weights; no row reads them)."""

    def __init__(self, device):
        self.device, self.built = device, {}

    def get(self, row: Row):
        if row.compile is not None:  # compiling changes the modules in place: a pair of its own
            torch.manual_seed(0)
            return build_pair(row.size, row.dropout, self.device)
        key = (row.size.label, row.dropout)
        if key not in self.built:
            torch.manual_seed(0)
            self.built[key] = build_pair(row.size, row.dropout, self.device)
        return self.built[key]


def run_row(row: Row, pairs: Pairs, device, rounds: int, warmup: int, ceilings: dict) -> dict:
    start = time.perf_counter()
    ours, theirs = pairs.get(row)
    size = row.size
    batch = make_batch(size, device)
    step_ours = make_step(ours, batch, row.precision, device, row.compile)
    step_theirs = make_step(theirs, batch, row.precision, device, row.compile)
    compile_s = {}
    if row.compile is not None:  # the first call compiles; time it apart from the rounds
        for name, step in (("ours", step_ours), ("pytorch", step_theirs)):
            t0 = time.perf_counter()
            step()
            sync(device)
            compile_s[name] = time.perf_counter() - t0
    result = interleaved(step_ours, step_theirs, rounds, device, warmup)
    flops = training_flops(ours.config, size.batch, size.length, size.length)
    tokens = size.batch * size.length
    out = {
        "size": size.name, "batch": size.batch, "length": size.length, "vocab": size.vocab,
        "d_model": ours.config.d_model, "layers": ours.config.num_layers,
        "precision": row.precision, "dropout": row.dropout, "mode": row.mode, **result,
        "ours_tflops": flops / result["ours_s"] / 1e12,
        "pytorch_tflops": flops / result["pytorch_s"] / 1e12,
        "ceiling_tflops": ceilings[row.precision] / 1e12,
        "ours_tokens_per_s": tokens / result["ours_s"],
        "pytorch_tokens_per_s": tokens / result["pytorch_s"],
        "ours_peak_bytes": peak_memory(step_ours, ours, device),
        "pytorch_peak_bytes": peak_memory(step_theirs, theirs, device),
        "compile_s": compile_s or None,
    }
    out["ours_share"] = out["ours_tflops"] / out["ceiling_tflops"]
    out["pytorch_share"] = out["pytorch_tflops"] / out["ceiling_tflops"]
    del step_ours, step_theirs
    if row.compile is not None:
        del ours, theirs
        torch._dynamo.reset()  # the compiled rows' caches would pile up
    if device.type == "cuda":
        torch.cuda.empty_cache()
    out["wall_s"] = time.perf_counter() - start
    return out


def gib(x: float | None) -> str:
    return "-" if x is None else f"{x / 2**30:.1f}"


def table(rows: list[dict]) -> str:
    lines = [
        "| model, batch x length | precision | mode | dropout | ours ms | PyTorch ms | ours / PyTorch (range) "
        "| ours TFLOP/s | share of ceiling (PyTorch's) | tokens/s ours / PyTorch | peak GiB ours / PyTorch |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']}, {r['batch']}x{r['length']} | {r['precision']} | {r['mode']} | {r['dropout']:g} "
            f"| {r['ours_s'] * 1e3:.1f} | {r['pytorch_s'] * 1e3:.1f} "
            f"| **{r['ratio']:.2f}** ({r['ratio_min']:.2f}-{r['ratio_max']:.2f}) "
            f"| {r['ours_tflops']:.3g} | {100 * r['ours_share']:.0f}% ({100 * r['pytorch_share']:.0f}%) "
            f"| {r['ours_tokens_per_s']:,.0f} / {r['pytorch_tokens_per_s']:,.0f} "
            f"| {gib(r['ours_peak_bytes'])} / {gib(r['pytorch_peak_bytes'])} |")
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="cuda or cpu (default: cuda when present)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes and 2 rounds: a smoke test")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per row")
    parser.add_argument("--precisions", default=",".join(PRECISIONS), help="comma-separated, of fp32,tf32,bf16")
    parser.add_argument("--modes", default="eager,compiled", help="comma-separated, of eager,compiled")
    parser.add_argument("--compile", default="layers", choices=COMPILE_MODES,
                        help="how the compiled rows compile: each layer on its own (default) or the whole step")
    parser.add_argument("--whole-graph-too", action="store_true",
                        help="add a compiled row of the first size with the whole step as one graph")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds: a row that would end later is skipped (and listed); default 230 on "
                             "a GPU, none on the CPU")
    parser.add_argument("--threads", type=int, default=None, help="torch threads on the CPU")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    args.precisions = [p for p in args.precisions.split(",") if p]
    args.modes = [m for m in args.modes.split(",") if m]
    for p in args.precisions:
        if p not in PRECISIONS:
            parser.error(f"--precisions must be among {PRECISIONS}, got {p!r}")
    for m in args.modes:
        if m not in ("eager", "compiled"):
            parser.error(f"--modes must be among ('eager', 'compiled'), got {m!r}")
    if args.device not in ("cpu", "cuda") or (args.device == "cuda" and not torch.cuda.is_available()):
        parser.error(f"--device must be cpu or cuda (with a CUDA device present), got {args.device!r}")
    if args.budget is None and args.device == "cuda" and not args.tiny:
        args.budget = 230.0  # the script's promise: at most 4 minutes on a GPU
    if args.rounds is not None and args.rounds < 1:
        parser.error(f"--rounds must be a positive int, got {args.rounds}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    kind = "tiny" if args.tiny else device.type
    rounds = args.rounds or ROUNDS[kind]
    header = {"torch": torch.__version__, "device": str(device), "device_name": device_name(device),
              "threads": torch.get_num_threads(), "sizes": kind, "rounds": rounds}
    print(f"torch {header['torch']}, {header['device_name']} ({device}), {rounds} interleaved rounds a row",
          flush=True)
    started = time.perf_counter()

    checks = [loss_check(size, device) for size in SIZES[kind][0]]
    for c in checks:
        print(f"same loss, float32, {c['size']}: ours {c['ours']:.6f}, PyTorch {c['pytorch']:.6f}"
              f" -> {'same' if c['same'] else 'DIFFERENT'}", flush=True)
    if not all(c["same"] for c in checks):
        print("the two models do not compute the same loss: timing them would compare different work",
              file=sys.stderr)
        return 1

    precisions = sorted({row.precision for row in plan(kind, device, args)}, key=PRECISIONS.index)
    ceilings = {p: matmul_ceiling(p, device) for p in precisions}
    for p, c in ceilings.items():
        print(f"ceiling, {p}: {c / 1e12:.3g} TFLOP/s", flush=True)

    rows, skipped = [], []
    pairs = Pairs(device)

    def save() -> None:  # after every row: a run stopped part-way keeps what it measured
        if args.json:
            with open(args.json, "w") as f:
                json.dump({**header, "loss_check": checks,
                           "ceilings_tflops": {p: c / 1e12 for p, c in ceilings.items()},
                           "rows": rows, "skipped": skipped, "seconds": time.perf_counter() - started},
                          f, indent=2)

    for row in plan(kind, device, args):
        elapsed = time.perf_counter() - started
        if args.budget and elapsed + ROW_SECONDS[row.compile] > args.budget:
            skipped.append(f"{row.size.label} {row.precision} {row.mode} dropout {row.dropout:g}")
            continue
        result = run_row(row, pairs, device, rounds, WARMUP[kind], ceilings)
        rows.append(result)
        save()
        extra = "" if row.compile is None else \
            f", compiled in {result['compile_s']['ours']:.0f} s / {result['compile_s']['pytorch']:.0f} s"
        print(f"{row.size.label} {row.precision} {row.mode} dropout {row.dropout:g}: ours/PyTorch "
              f"{result['ratio']:.3f} ({result['ratio_min']:.2f}-{result['ratio_max']:.2f}), "
              f"{result['ours_tflops']:.3g} TFLOP/s{extra} [{time.perf_counter() - started:.0f} s]", flush=True)

    print()
    print(f"{header['device_name']}, torch {header['torch']}, {rounds} interleaved rounds a row, "
          f"ceilings (TFLOP/s): " + ", ".join(f"{p} {c / 1e12:.3g}" for p, c in ceilings.items()))
    print(table(rows))
    for line in skipped:
        print(f"skipped (it would have ended past --budget {args.budget:g} s): {line}")
    print(f"total {time.perf_counter() - started:.0f} s")
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
