"""Every claim of the deck, evaluated on ten variant builds: seeds 0 to 4, each with this
machine's own CPU kernels and with ``ATEN_CPU_CAPABILITY=default``.

A sentence of the deck about a trained model must hold on builds other than the one it was
written on (``transformer_lab.teaching.claims``). This script trains the deck's models
(``tt.PRONOUN_MODEL``, ``tt.DATES_MODEL``) once per variant, each variant in a process of
its own on one thread (two at a time: our machine has two cores), evaluates every
registered claim on each, and prints one table, claim by variant, with the measured value,
then how many variants each claim holds in. The deck requires 9 of 10.

    .venv/bin/python benchmarks/claims_matrix.py                  # all ten variants
    .venv/bin/python benchmarks/claims_matrix.py --seeds 0 1 --kernels native
    .venv/bin/python benchmarks/claims_matrix.py --json benchmarks/results/claims_matrix.json

Trained models are kept in the deck's cache (``.cache/transformer_lab``; its keys include
the seed and the kernels), so a second run evaluates in seconds, and the deck's own model
(seed 0, native kernels) is the one the deck shows. Timing claims are generated from the
build machine's own measurement and are not varied here (listed as such).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KERNELS = {"native": None, "default": "default"}  # ATEN_CPU_CAPABILITY per kernel set
REQUIRED = 9  # of 10 variants: what the deck asks of every claim about a trained model


def worker(seed: int, out: Path) -> int:
    """Evaluate every claim on one variant (this process's kernels), write JSON to ``out``."""
    import torch

    torch.set_num_threads(1)
    from transformer_lab import teaching as tt
    from transformer_lab.teaching import claims

    tt.set_cache_directory(os.environ.get("TL_CACHE_DIR", REPO / ".cache" / "transformer_lab"))
    ctx = claims.Context(seed=seed)
    results = []
    for c in claims.all_claims():
        if c.kind == "timing":
            results.append({"id": c.id, "kind": c.kind, "skipped": "timing: generated from the build's measurement"})
            continue
        started = time.perf_counter()
        try:
            f = claims.evaluate(c, ctx)
            results.append({"id": c.id, "kind": c.kind, "holds": f.holds, "shown": f.shown,
                            "sentence": f.sentence, "seconds": time.perf_counter() - started})
        except Exception as e:  # a claim that cannot be measured on this variant is a failure, said so
            results.append({"id": c.id, "kind": c.kind, "holds": False, "shown": f"error: {type(e).__name__}: {e}",
                            "sentence": "", "seconds": time.perf_counter() - started})
    out.write_text(json.dumps({"seed": seed, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                               "torch": torch.__version__, "claims": results}, indent=1))
    return 0


def run_variant(seed: int, kernels: str, folder: Path) -> dict:
    out = folder / f"seed{seed}-{kernels}.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "code"))
    env.pop("ATEN_CPU_CAPABILITY", None)
    if KERNELS[kernels] is not None:
        env["ATEN_CPU_CAPABILITY"] = KERNELS[kernels]
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--worker", str(seed), "--out", str(out)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"variant seed {seed}, {kernels} kernels failed (exit {proc.returncode}):\n"
                           f"{proc.stderr[-3000:]}")
    data = json.loads(out.read_text())
    data.update(kernels=kernels, seconds=time.perf_counter() - started)
    return data


def table(variants: list[dict]) -> tuple[str, list[dict]]:
    """The markdown table (claim by variant) and one summary row per claim."""
    from transformer_lab.teaching import claims

    names = [f"s{v['seed']} {v['kernels'][:3]}" for v in variants]
    lines = ["| claim | slide | " + " | ".join(names) + " | holds |",
             "|---|---|" + "---|" * len(names) + "---|"]
    summary = []
    for c in claims.all_claims():
        cells, held, counted = [], 0, 0
        for v in variants:
            r = next(r for r in v["claims"] if r["id"] == c.id)
            if "skipped" in r:
                cells.append("-")
                continue
            counted += 1
            held += bool(r["holds"])
            cells.append(("✓ " if r["holds"] else "✗ ") + r["shown"].replace("|", "/"))
        verdict = "generated (timing)" if counted == 0 else f"{held}/{counted}"
        summary.append({"id": c.id, "kind": c.kind, "slide": c.slide, "held": held, "variants": counted,
                        "generated": c.generated})
        lines.append(f"| `{c.id}` | {c.slide} | " + " | ".join(cells) + f" | {verdict} |")
    return "\n".join(lines), summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--kernels", nargs="+", choices=sorted(KERNELS), default=["native", "default"])
    parser.add_argument("--jobs", type=int, default=2, help="variants evaluated at once (one thread each)")
    parser.add_argument("--json", metavar="PATH", help="also write every variant's results as JSON")
    parser.add_argument("--worker", type=int, metavar="SEED", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker(args.worker, args.out)
    if any(s < 0 for s in args.seeds):
        parser.error(f"--seeds must be non-negative, got {args.seeds}")
    if args.jobs < 1:
        parser.error(f"--jobs must be a positive int, got {args.jobs}")
    sys.path.insert(0, str(REPO / "code"))
    import tempfile

    plan = [(s, k) for s in args.seeds for k in args.kernels]
    print(f"claims matrix: {len(plan)} variants (seeds {args.seeds} x kernels {args.kernels}), "
          f"{args.jobs} at a time, one thread each", flush=True)
    started = time.perf_counter()
    done: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="claims-matrix-") as tmp, ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_variant, s, k, Path(tmp)) for s, k in plan]
        for future in as_completed(futures):
            v = future.result()
            done.append(v)
            results = [r for r in v["claims"] if "skipped" not in r]
            failed = [r["id"] for r in results if not r["holds"]]
            print(f"[{len(done)}/{len(plan)}] seed {v['seed']}, {v['kernels']} kernels ({v['cpu_capability']}): "
                  f"{len(results) - len(failed)} of {len(results)} claims hold ({v['seconds']:.0f} s)"
                  + (f"; not: {', '.join(failed)}" if failed else ""), flush=True)
    done.sort(key=lambda v: (v["seed"], list(KERNELS).index(v["kernels"])))
    text, summary = table(done)
    print()
    print(text)
    weak = [s for s in summary if s["variants"] and s["held"] < REQUIRED * s["variants"] / 10]
    measured = [s for s in summary if s["variants"]]
    print(f"\n{len(measured)} claims evaluated on {len(done)} variants, {len(summary) - len(measured)} timing "
          f"claims generated on the build machine; {len(measured) - len(weak)} hold in at least "
          f"{REQUIRED} of 10 (scaled to the variants run); {time.perf_counter() - started:.0f} s in all.")
    for s in weak:
        print(f"  below the bar: {s['id']} ({s['slide']}): {s['held']} of {s['variants']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"variants": done, "summary": summary}, indent=1))
    return 1 if weak else 0


if __name__ == "__main__":
    sys.exit(main())
