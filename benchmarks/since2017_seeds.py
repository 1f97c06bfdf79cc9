"""Which differences measured by ``transformer_lab.teaching.since2017`` hold over seeds.

The deck trains each change once (seed 0). This script runs the same functions for
several seeds (each cached like the deck's, so a rerun reads them) and prints, for every
difference to the paper's model, its value per seed, the range, and in how many seeds it
has the sign of the median: a difference is called holding when every seed agrees.

    python benchmarks/since2017_seeds.py                     # seeds 0-4, tables to stdout
    python benchmarks/since2017_seeds.py --seeds 0 1 2 --json out.json

Every run trains at one thread (as the deck does), so seeds can run side by side in
separate processes (``--seeds 3`` in one, ``--seeds 4`` in another) sharing the cache.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from transformer_lab.teaching import since2017 as s


def agreement(values: list[float]) -> tuple[int, str]:
    """How many values share the median's sign (0 counts as neither), and that sign."""
    middle = statistics.median(values)
    sign = (middle > 0) - (middle < 0)
    return sum(((v > 0) - (v < 0)) == sign for v in values), "+" if sign > 0 else "-" if sign < 0 else "0"


def line(name: str, values: list[float], digits: int = 3) -> str:
    agree, sign = agreement(values)
    cells = " ".join(f"{v:+.{digits}f}" for v in values)
    holds = "holds" if agree == len(values) and sign != "0" else "does not hold"
    return (f"  {name:44s} {cells}   range [{min(values):+.{digits}f}, {max(values):+.{digits}f}]  "
            f"median {statistics.median(values):+.{digits}f}  sign {sign} in {agree}/{len(values)}: {holds}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--json", help="write every seed's tables here")
    args = parser.parse_args(argv)
    results = {}
    for seed in args.seeds:
        start = time.perf_counter()
        results[seed] = {"changes": s.changes_compared(seed), "positions": s.positions_beyond_training(seed),
                         "warmup": s.warmup_and_layer_norm(seed), "cache": s.kv_cache_costs(seed)}
        print(f"seed {seed}: {time.perf_counter() - start:.0f} s (0 when cached)", flush=True)
    seeds = list(results)
    print(f"\nSeeds {seeds}. Differences to the paper's model (held out, lengths 1-{s.DECK_BUDGET.max_len}):")
    for key in s.DECK_CHANGES[1:]:
        rows = [results[seed]["changes"].row(key) for seed in seeds]
        print(f"{rows[0].label}:")
        print(line("exact match - paper's", [r.exact_match_change for r in rows]))
        print(line("loss - paper's", [r.loss_change for r in rows]))
        print(line("step time / paper's - 1", [r.step_time_ratio - 1 for r in rows], 2))
        print(f"  parameters / paper's: {rows[0].parameter_ratio:.3f}")
    print(f"\nPositions, trained on 1-{s.DECK_BUDGET.max_len} symbols, tested on {2 * s.DECK_BUDGET.max_len}:")
    names = [r.positions for r in results[seeds[0]]["positions"].rows]
    for i, name in enumerate(names):
        rows = [results[seed]["positions"].rows[i] for seed in seeds]
        print(f"  {name:11s} exact match at 2L {[round(r.exact_match_2l, 3) for r in rows]}, token accuracy at 2L "
              f"{[round(r.token_accuracy_2l, 3) for r in rows]}, loss at 2L {[round(r.loss_2l, 2) for r in rows]}")
    for name in names[1:]:
        i, base = names.index(name), 0
        print(line(f"{name}: token accuracy at 2L - sinusoidal's",
                   [results[seed]["positions"].rows[i].token_accuracy_2l
                    - results[seed]["positions"].rows[base].token_accuracy_2l for seed in seeds]))
    print("\nWarm-up (Section 5.3) and the norm's place:")
    for norm in ("post-LN", "pre-LN"):
        for warmup in (True, False):
            rows = [results[seed]["warmup"].row(norm, warmup) for seed in seeds]
            print(f"  {norm} {'with' if warmup else 'without'} warm-up: exact match "
                  f"{[round(r.exact_match, 3) for r in rows]}, final train loss "
                  f"{[round(r.final_train_loss, 3) for r in rows]}, finite {[r.finite for r in rows]}")
        print(line(f"{norm}: exact match without - with warm-up",
                   [results[seed]["warmup"].row(norm, False).exact_match
                    - results[seed]["warmup"].row(norm, True).exact_match for seed in seeds]))
    print(line("without warm-up: pre-LN - post-LN exact match",
               [results[seed]["warmup"].row("pre-LN", False).exact_match
                - results[seed]["warmup"].row("post-LN", False).exact_match for seed in seeds]))
    print("\nKey/value cache (decoder-only, d_model 256, 8 heads, 4 layers, batch 4, float32):")
    for i, row in enumerate(results[seeds[0]]["cache"].rows):
        rows = [results[seed]["cache"].rows[i] for seed in seeds]
        print(f"  {row.attention:13s} {row.bytes_per_token} bytes/token; step time / multi-head's at "
              f"{results[seeds[0]]['cache'].long_context} positions {[round(r.time_ratio_long, 2) for r in rows]}, "
              f"at {results[seeds[0]]['cache'].short_context} {[round(r.time_ratio_short, 2) for r in rows]}")
    out = {seed: {name: _plain(value) for name, value in tables.items()} for seed, tables in results.items()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


def _plain(value):
    import dataclasses

    return dataclasses.asdict(value)


if __name__ == "__main__":
    main()
