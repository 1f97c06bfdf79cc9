"""Cold builds of the project's deck, this tree against another revision, side by side.

A cold build is what `make deck` does on a fresh clone once the toolchain is installed:
no cell cache, no trained models, no timings, HTML and PDF. Each round copies both trees'
sources (`git archive`, so only committed files, plus the working tree's uncommitted
changes for "HEAD" when --worktree is given) into new folders and renders each with its own
deckbuild and package, alternating which goes first, so both sides see the same machine.

    python benchmarks/bench_build.py                    # this commit vs 311d9ee, 3 rounds
    python benchmarks/bench_build.py --against 311d9ee --rounds 5 --json out.json
    python benchmarks/bench_build.py --only HEAD --rounds 1   # one side only

The machine is shared and noisy (PERF.md): report medians with their ranges, and compare
only numbers from one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def checkout(rev: str, dest: Path, worktree: bool) -> Path:
    """The committed tree at ``rev`` in ``dest`` (with the working tree's changes when
    ``worktree``), with the repository's node_modules linked."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    if worktree:
        diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=REPO, check=True,
                              capture_output=True).stdout
        if diff:
            subprocess.run(["git", "apply", "--directory", "", "-"], cwd=dest, input=diff,
                           check=True)
    (dest / "node_modules").symlink_to(REPO / "node_modules")
    return dest


def cold_build(tree: Path) -> tuple[float, str]:
    """Seconds for `python -m deckbuild render` (HTML and PDF) in a fresh copy of ``tree``,
    and the build's last lines."""
    env = dict(os.environ, PYTHONPATH=str(tree / "code"))
    env.pop("TL_CACHE_DIR", None)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "deckbuild", "render", "slides/index.qmd"],
                          cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"build failed in {tree}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return seconds, "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-9:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="311d9ee", help="the other revision (default 311d9ee)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["HEAD", "against"], help="build one side only")
    parser.add_argument("--worktree", action="store_true",
                        help="HEAD includes the working tree's uncommitted changes")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    sides = {"HEAD": "HEAD", args.against: args.against}
    if args.only == "HEAD":
        sides.pop(args.against)
    elif args.only == "against":
        sides.pop("HEAD")
    times: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for name in order:
                tree = checkout(sides[name], Path(tmp) / f"{r}-{name}", args.worktree and name == "HEAD")
                seconds, tail = cold_build(tree)
                times[name].append(seconds)
                print(f"round {r + 1} {name}: {seconds:.1f} s\n{tail}\n", flush=True)
                shutil.rmtree(tree)
    summary = {name: {"median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts),
                      "runs_s": ts} for name, ts in times.items()}
    for name, s in summary.items():
        print(f"{name}: cold build (HTML + PDF) median {s['median_s']:.1f} s "
              f"(range {s['min_s']:.1f}-{s['max_s']:.1f}, {len(s['runs_s'])} runs)")
    if len(times) == 2:
        a, b = (statistics.median(times[n]) for n in sides)
        print(f"ratio HEAD / {args.against}: {a / b:.2f}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
