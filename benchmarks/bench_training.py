"""Training and decoding targets of issue 4, measured on this machine.

1. The tiny preset solves ``copy`` (100% exact match on the held-out test split) within
   20 s of training, and the reordering task ``dates`` (>= 99% exact match on held-out
   data) within 60 s. Each run is ``fit(RunConfig(task=..., time_budget=...))`` with the
   task's defaults (what ``python -m transformer_lab.cli.train`` runs); we report the training seconds (evaluation excluded) at the
   first validation check that reached the target and the test-set exact match at the end.
2. Greedy decoding of 256 tokens (B=1, source of 64 tokens) with the key/value cache
   against recomputing the whole prefix every step, interleaved rounds, medians; and how
   flat the cached per-token cost stays (median of the last 8 steps / the first 8).

    python benchmarks/bench_training.py                   # everything, 3 runs per task
    python benchmarks/bench_training.py --only decoding   # or: copy, dates
    python benchmarks/bench_training.py --runs 5 --json out.json

The machine is shared and noisy (see PERF.md): we take medians of several runs.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

import transformer_lab as tl
from transformer_lab import teaching as tt
from transformer_lab.cli.train import parse

TARGETS = {"copy": (1.0, 20.0), "dates": (0.99, 60.0)}


def train_run(task: str, seed: int, budget: float, extra: list[str]) -> dict:
    target, _ = TARGETS[task]
    config, _ = parse(extra)  # any further options, as the command line takes them
    result = tl.fit(config.replace(task=task, time_budget=budget, seed=seed, eval_interval=50, output_dir=None))
    reached = [r for r in result.history if r.get("val_exact_match", -1) >= target]
    return {
        "seed": seed,
        "steps": result.step,
        "train_seconds": result.train_seconds,
        "seconds_to_target": reached[0]["train_seconds"] if reached else None,
        "test_exact_match": result.test["exact_match"],
        "test_token_accuracy": result.test["token_accuracy"],
        "test_bleu": result.test["bleu"],
    }


def bench_task(task: str, runs: int, extra: list[str]) -> dict:
    target, budget = TARGETS[task]
    results = []
    for seed in range(runs):
        r = train_run(task, seed, budget, extra)
        results.append(r)
        print(f"  {task} seed {seed}: test exact match {r['test_exact_match']:.4f} after "
              f"{r['train_seconds']:.1f} s ({r['steps']} steps); validation reached {target:.0%} at "
              f"{r['seconds_to_target']} s", flush=True)
    times = [r["seconds_to_target"] if r["seconds_to_target"] is not None else float("inf") for r in results]
    summary = {
        "task": task, "target_exact_match": target, "budget_s": budget, "runs": results,
        "median_seconds_to_target": statistics.median(times),
        "median_test_exact_match": statistics.median(r["test_exact_match"] for r in results),
        "runs_meeting_target": sum(r["test_exact_match"] >= target for r in results),
    }
    print(f"{task}: median test exact match {summary['median_test_exact_match']:.4f} within {budget:.0f} s "
          f"(target {target:.0%}); {summary['runs_meeting_target']}/{runs} runs met it; median time to "
          f"the target on validation {summary['median_seconds_to_target']:.1f} s", flush=True)
    return summary


def bench_decoding(preset: str, rounds: int, new_tokens: int = 256, src_len: int = 64) -> dict:
    torch.manual_seed(0)
    config = getattr(tl.TransformerConfig, preset)(1000, max_len=1024)
    model = tl.Transformer(config).eval()
    with torch.no_grad():
        model.output_projection.bias[tl.EOS_ID] = -1e4  # never stop early
    src = torch.randint(4, 1000, (1, src_len))
    out = tl.greedy_decode(model, src, new_tokens + 1, tl.BOS_ID, tl.EOS_ID)
    assert out.size(1) == new_tokens + 1
    tt.decode_step_times(model, src, 16, True), tt.decode_step_times(model, src, 16, False)  # warm-up
    cached, full, ratios, flat = [], [], [], []
    for i in range(rounds):
        order = (True, False) if i % 2 == 0 else (False, True)
        t = {c: tt.decode_step_times(model, src, new_tokens, c) for c in order}  # ms
        cached.append(sum(t[True])), full.append(sum(t[False]))
        ratios.append(sum(t[False]) / sum(t[True]))
        flat.append(statistics.median(t[True][-8:]) / statistics.median(t[True][:8]))
    result = {
        "preset": preset, "new_tokens": new_tokens, "src_len": src_len,
        "cached_s": statistics.median(cached) / 1e3, "recompute_s": statistics.median(full) / 1e3,
        "speedup": statistics.median(ratios), "last8_over_first8": statistics.median(flat),
    }
    print(f"decoding ({preset}, {new_tokens} tokens, source {src_len}): cache {result['cached_s'] * 1e3:.0f} ms, "
          f"recompute {result['recompute_s'] * 1e3:.0f} ms, speed-up {result['speedup']:.1f}x (target >= 5); "
          f"cached last 8 / first 8 steps {result['last8_over_first8']:.2f} (target <= 1.3)", flush=True)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", choices=["copy", "dates", "decoding"], action="append",
                   help="run only these parts (repeatable)")
    p.add_argument("--runs", type=int, default=3, help="training runs (seeds) per task")
    p.add_argument("--rounds", type=int, default=5, help="interleaved decoding rounds")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("extra", nargs="*", help="more options for transformer_lab.cli.train (after --)")
    args = p.parse_args()
    parts = args.only or ["decoding", "copy", "dates"]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    results = {}
    if "decoding" in parts:
        results["decoding"] = [bench_decoding(p, args.rounds) for p in ("tiny", "base")]
    for task in ("copy", "dates"):
        if task in parts:
            results[task] = bench_task(task, args.runs, args.extra)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
