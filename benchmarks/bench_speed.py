"""Speed of transformer_lab against PyTorch's built-in modules, side by side.

Every comparison runs ours and PyTorch's in the same process, interleaved round by round,
and reports medians and the ratio ours / PyTorch (below 1.0: ours is faster). The machine
is shared and noisy, so only ratios of interleaved runs mean much; absolute times are for
orientation.

Like for like: both sides drop out in the same places at the same rate (``--dropout``,
0 by default). PyTorch's layers apply their one ``dropout`` to the attention weights, the
feed-forward activations, the sub-layer outputs (and, in our ``nn.Transformer`` wrapper,
the embeddings); ours is built with ``dropout``, ``attention_dropout`` and
``activation_dropout`` all equal to it. With 0 (the default) neither side draws a mask.

    python benchmarks/bench_speed.py            # the full set (about 2-3 minutes on 2 cores)
    python benchmarks/bench_speed.py --quick    # fewer repeats, smaller sizes (a smoke test)
    python benchmarks/bench_speed.py --deck --json out.json   # the deck's slide (seconds)
    python benchmarks/bench_speed.py --dropout 0.1            # both sides drop, everywhere

The JSON records the device, the thread count, the rounds, the dropout and, per row, the
PyTorch module compared against and the sizes (batch, length, d_model, heads, d_ff, and
layers: per stack, so the encoder-decoder row's 3 means 3 encoder and 3 decoder layers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import torch
from torch import nn

import transformer_lab as tl
from transformer_lab.interop import copy_into_torch_attention

#: batch, length and long length (the explicit / fused row) of each mode
MODE_SIZES = {"quick": (2, 64, 128), "deck": (4, 256, 512), "full": (8, 512, 1024)}
MODE_ROUNDS = {"quick": 3, "deck": 5, "full": 15}
SEQ2SEQ = dict(batch=32, length=64, vocab=1000, d_model=256, heads=4, d_ff=1024, layers=3)


def timed(fn, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def compare(ours, theirs, rounds: int, device, warmup: int = 2) -> tuple[float, float, float]:
    """Median seconds of ``ours`` and ``theirs`` over interleaved rounds, and the median
    of the per-round ratios."""
    for _ in range(warmup):
        ours(), theirs()
    a, b, ratios = [], [], []
    for i in range(rounds):
        if i % 2:  # alternate who goes first
            tb, ta = timed(theirs, device), timed(ours, device)
        else:
            ta, tb = timed(ours, device), timed(theirs, device)
        a.append(ta), b.append(tb), ratios.append(ta / tb)
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def device_name(device: torch.device) -> str:
    """The accelerator's name, or the CPU's model name and core count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


# -- the pairs of modules, built alike (the tests check that they drop out alike) --------


def build_mha(d_model: int, heads: int, dropout: float, device) -> tuple[nn.Module, nn.Module]:
    """Our multi-head attention and ``nn.MultiheadAttention`` with our weights; both drop
    the attention weights with probability ``dropout``."""
    ours = tl.MultiHeadAttention(d_model, heads, dropout=dropout).to(device)
    ref = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True).to(device)
    copy_into_torch_attention(ours, ref)
    return ours.train(), ref.train()


def build_encoder_layer(d_model: int, heads: int, d_ff: int, dropout: float, device) -> tuple[nn.Module, nn.Module]:
    """Our encoder layer and ``nn.TransformerEncoderLayer`` (post-LN, ReLU), both dropping
    the attention weights, the feed-forward activations and the sub-layer outputs."""
    ours = tl.EncoderLayer.build(d_model, heads, d_ff, dropout=dropout, attention_dropout=dropout,
                                 activation_dropout=dropout)
    ref = nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout=dropout, batch_first=True)
    return ours.to(device).train(), ref.to(device).train()


class TorchSeq2Seq(nn.Module):
    """nn.Transformer with the same embeddings, positions and output layer as ours.
    ``nn.Transformer`` has one dropout rate for every place, so ``config`` must have
    ``attention_dropout == activation_dropout == dropout``."""

    def __init__(self, config: tl.TransformerConfig):
        super().__init__()
        c = config
        if not c.attention_dropout == c.activation_dropout == c.dropout:
            raise ValueError("config must have attention_dropout == activation_dropout == dropout (nn.Transformer "
                             f"has one rate), got {c.attention_dropout}, {c.activation_dropout} and {c.dropout}")
        self.config = c
        self.embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.register_buffer("table", tl.sinusoidal_positional_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        self.transformer = nn.Transformer(c.d_model, c.num_heads, c.num_layers, c.num_layers, c.d_ff,
                                          dropout=c.dropout, batch_first=True)
        self.transformer.encoder.norm = self.transformer.decoder.norm = None  # post-LN, as ours
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size)
        self.output.weight = self.embed.weight

    def forward(self, src, tgt):
        scale = self.config.d_model**0.5
        s = self.dropout(self.embed(src) * scale + self.table[: src.size(1)])
        t = self.dropout(self.embed(tgt) * scale + self.table[: tgt.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device, dtype=torch.bool)
        pad_src, pad_tgt = src == self.config.pad_id, tgt == self.config.pad_id
        # tgt_is_causal=True is the hint PyTorch's documentation asks for: without it,
        # nn.Transformer compares the mask with a causal one, a host sync (and a graph break
        # under torch.compile). With padding masks present it still attends with the merged mask.
        x = self.transformer(s, t, tgt_mask=causal, src_key_padding_mask=pad_src,
                             tgt_key_padding_mask=pad_tgt, memory_key_padding_mask=pad_src, tgt_is_causal=True)
        return self.output(x)


def seq2seq_config(dropout: float) -> tl.TransformerConfig:
    s = SEQ2SEQ
    return tl.TransformerConfig(s["vocab"], s["vocab"], d_model=s["d_model"], num_heads=s["heads"], d_ff=s["d_ff"],
                                num_layers=s["layers"], shared_vocab=True, max_len=256, dropout=dropout,
                                attention_dropout=dropout, activation_dropout=dropout)


def build_seq2seq(dropout: float, device) -> tuple[nn.Module, nn.Module]:
    """Our Transformer and ``nn.Transformer`` in :class:`TorchSeq2Seq`, dropping alike."""
    config = seq2seq_config(dropout)
    return tl.Transformer(config).to(device).train(), TorchSeq2Seq(config).to(device).train()


# -- the comparisons ---------------------------------------------------------------------


def bench_mha(args, device):
    B, T, D, H = args.batch, args.seq, 512, 8
    ours, ref = build_mha(D, H, args.dropout, device)
    x = torch.randn(B, T, D, device=device, requires_grad=True)

    def run_ours():
        ours(x, x, x).sum().backward()

    def run_theirs():
        out, _ = ref(x, x, x, need_weights=False)
        out.sum().backward()

    info = {"pytorch": "nn.MultiheadAttention", "sizes": dict(batch=B, length=T, d_model=D, heads=H)}
    return (f"multi-head attention fwd+bwd (B={B}, T={T}, D={D}, h={H})",
            compare(run_ours, run_theirs, args.rounds, device), info)


def bench_encoder_layer(args, device):
    B, T, D, H, Fd = args.batch, args.seq, 512, 8, 2048
    ours, ref = build_encoder_layer(D, H, Fd, args.dropout, device)
    x = torch.randn(B, T, D, device=device)
    opt_ours = torch.optim.Adam(ours.parameters(), lr=1e-4)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=1e-4)

    def step(module, opt):
        def run():
            opt.zero_grad(set_to_none=True)
            module(x).square().mean().backward()
            opt.step()
        return run

    info = {"pytorch": "nn.TransformerEncoderLayer",
            "sizes": dict(batch=B, length=T, d_model=D, heads=H, d_ff=Fd, layers=1)}
    return (f"encoder layer training step (B={B}, T={T}, D={D}, d_ff={Fd})",
            compare(step(ours, opt_ours), step(ref, opt_ref), args.rounds, device), info)


def training_flops(c: tl.TransformerConfig, B: int, S: int, T: int) -> float:
    """Matmul FLOPs of one training step (forward x 3 for forward + backward)."""
    D, Fd, N, V = c.d_model, c.d_ff, c.num_layers, c.tgt_vocab_size
    enc = B * S * (4 * D * D + 2 * D * Fd) + B * S * S * 2 * D  # projections, FFN, QK^T and AV
    dec = B * T * (4 * D * D + 2 * D * D + 2 * D * Fd) + B * S * 2 * D * D  # self, cross (Q, O; K, V on memory), FFN
    dec += B * T * T * 2 * D + B * T * S * 2 * D
    logits = B * T * D * V
    return 3 * 2 * (N * (enc + dec) + logits)


def matmul_gflops(device, n=1024, repeats=5) -> float:
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    best = min(timed(lambda: a @ b, device) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def bench_seq2seq(args, device):
    B, L, V = SEQ2SEQ["batch"], SEQ2SEQ["length"], SEQ2SEQ["vocab"]
    ours, ref = build_seq2seq(args.dropout, device)
    config = ours.config
    src = torch.randint(4, V, (B, L), device=device)
    tgt = torch.randint(4, V, (B, L), device=device)
    loss_fn = tl.LabelSmoothingLoss(0.1)
    opts = {m: torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9) for m in (ours, ref)}

    def step(model):
        def run():
            opts[model].zero_grad(set_to_none=True)
            loss_fn(model(src, tgt[:, :-1]), tgt[:, 1:]).backward()
            opts[model].step()
        return run

    result = compare(step(ours), step(ref), args.rounds, device)
    flops = training_flops(config, B, L, L - 1)
    ceiling = matmul_gflops(device)
    achieved = flops / result[0] / 1e9
    info = {"pytorch": "nn.Transformer",
            "sizes": dict(batch=B, length=L, d_model=config.d_model, heads=config.num_heads, d_ff=config.d_ff,
                          layers=config.num_layers, vocab=V),
            "gflops": achieved, "ceiling_gflops": ceiling, "fraction_of_ceiling": achieved / ceiling,
            "target_tokens_per_s": B * (L - 1) / result[0]}
    return (f"encoder-decoder training step (d_model {config.d_model}, {config.num_layers}+{config.num_layers} "
            f"layers, B={B}, T={L})", result, info)


def bench_explicit_vs_fused(args, device):
    B, H, T, K = 4, 8, args.long_seq, 64
    q, k, v = (torch.randn(B, H, T, K, device=device, requires_grad=True) for _ in range(3))
    mask = tl.causal_mask(T, device=device)

    def explicit():  # the path that forms the weights, as record_attention does
        (tl.attention_weights(q, k, mask) @ v).sum().backward()

    def fused():
        tl.scaled_dot_product_attention(q, k, v, mask).sum().backward()

    # ours against ours; neither path drops out, whatever --dropout says
    info = {"pytorch": None, "dropout": 0.0, "sizes": dict(batch=B, length=T, d_model=H * K, heads=H)}
    return (f"explicit / fused attention fwd+bwd (B={B}, h={H}, T={T}, causal)",
            compare(explicit, fused, args.rounds, device), info)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds (a smoke test)")
    parser.add_argument("--deck", action="store_true",
                        help="medium sizes and 5 rounds, about 20 s on a 2-core CPU (the deck's speed slide)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds per comparison")
    parser.add_argument("--dropout", type=float, default=0.0,
                        help="dropout on both sides, in every place PyTorch's layers drop (default 0)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if not 0.0 <= args.dropout < 1.0:
        parser.error(f"--dropout must be in [0, 1), got {args.dropout}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads must be a positive int, got {args.threads}")
    args.mode = "quick" if args.quick else "deck" if args.deck else "full"
    args.rounds = args.rounds or MODE_ROUNDS[args.mode]
    args.batch, args.seq, args.long_seq = MODE_SIZES[args.mode]
    return args


def report(rows) -> None:
    for row in rows:
        if "gflops" in row:
            print(f"\nencoder-decoder training step: {row['gflops']:.0f} GFLOP/s = "
                  f"{100 * row['fraction_of_ceiling']:.0f}% of this machine's torch.matmul "
                  f"({row['ceiling_gflops']:.0f} GFLOP/s on 1024^3 float32); "
                  f"{row['target_tokens_per_s']:.0f} target tokens/s")
    print("(the last row compares our two paths: explicit, which forms the weights, over fused)")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.manual_seed(0)
    header = {"torch": torch.__version__, "device": str(device), "device_name": device_name(device),
              "threads": torch.get_num_threads(), "mode": args.mode, "rounds": args.rounds, "dropout": args.dropout}
    print(f"torch {header['torch']}, device {device} ({header['device_name']}), threads {header['threads']}, "
          f"{args.rounds} interleaved rounds per row, dropout {args.dropout} on both sides", flush=True)
    rows = []
    print(f"| {'benchmark':<66} | ours ms | PyTorch ms | ours / PyTorch |")
    print(f"|{'-' * 68}|---------|------------|----------------|")
    for bench in (bench_mha, bench_encoder_layer, bench_seq2seq, bench_explicit_vs_fused):
        name, (a, b, ratio), info = bench(args, device)
        rows.append({"benchmark": name, "ours_ms": a * 1e3, "pytorch_ms": b * 1e3, "ratio": ratio,
                     "dropout": args.dropout, **info})
        print(f"| {name:<66} | {a * 1e3:7.1f} | {b * 1e3:10.1f} | {ratio:14.2f} |", flush=True)
    report(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**header, "rows": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
