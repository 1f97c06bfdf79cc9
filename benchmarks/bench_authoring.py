"""Authoring speed: the time from saving a one-cell edit to the preview serving the new
page (issue 13's target: at most 15 s on the project machine).

It starts ``deckbuild preview`` on a deck, waits for its first build (warm cache), then,
for each edit, adds a line to one cell (it prints an HTML comment, so the page's
markdown changes and pandoc runs), saves, and times until the preview's
version number changes (the open page polls it every 0.7 s and reloads); the file is
restored afterwards. Medians over ``--repeats`` edits (each with a new comment, so each
is a real change). Decks: the test deck tests/deckbuild/decks/partial (copied to a
temporary folder) and the real deck slides/index.qmd (edited in place, then restored).

    .venv/bin/python benchmarks/bench_authoring.py [--repeats 3] [--only test|real]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# (label, file relative to the project, a code line of the cell to edit)
TEST_EDITS = [("typical: one cell and its reader", "deck.qmd", "b = 10"),
              ("worst: the setup cell (all cells)", "deck.qmd", "np.random.seed(0)")]
REAL_EDITS = [("typical: 06-sdpa.qmd:35", "slides/chapters/06-sdpa.qmd",
               "head = tt.one_head_steps(x, w_q, w_k, w_v)"),
              ("expensive: 17-speed.qmd, the speed table (timings cached by tt.cached)",
               "slides/chapters/17-speed.qmd",
               'result = tt.cached("speed", measure, inputs={"bench": bench.read_text()})')]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _version(port: int) -> int | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/__deckbuild/version", timeout=2) as r:
            return json.loads(r.read())["version"]
    except OSError:
        return None


def _wait_version(port: int, above: int, limit: float) -> int:
    end = time.perf_counter() + limit
    while time.perf_counter() < end:
        v = _version(port)
        if v is not None and v > above:
            return v
        time.sleep(0.05)
    raise TimeoutError(f"the preview did not rebuild within {limit:.0f} s")


def _anchor(path: Path, line: str | None) -> str:
    """The line to edit: ``line``, or the first code line of the second cell of the file."""
    if line is not None:
        return line
    text = path.read_text().splitlines()
    fences = [i for i, l in enumerate(text) if l.startswith("```{python}")]
    i = fences[1] + 1
    while text[i].startswith("#|"):
        i += 1
    return text[i]


def _restore(path: Path, text: str) -> None:
    """Put the edited file back, atomically and with TERM/INT held off meanwhile."""
    held = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        tmp = path.with_name(f".{path.name}.bench-restore")
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def measure(cwd: Path, target: str, edits: list, repeats: int, env: dict) -> list:
    port = _free_port()
    log = open(Path(tempfile.mkdtemp(prefix="bench-preview-")) / "preview.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "preview", "--no-browser",
                             "--port", str(port), target], cwd=cwd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    results = []
    try:
        version = _wait_version(port, 0, 1800)
        for label, rel, line in edits:
            path = cwd / rel
            original = path.read_text()
            anchor = _anchor(path, line)
            times = []
            try:
                for n in range(repeats):
                    time.sleep(1.0)      # the watcher polls every 0.5 s
                    # a visible edit: the cell prints one more line, so pandoc runs too
                    edited = original.replace(
                        anchor, f"{anchor}\nprint('<!-- bench edit {n} {time.time()} -->')", 1)
                    t0 = time.perf_counter()
                    path.write_text(edited)
                    version = _wait_version(port, version, 900)
                    times.append(time.perf_counter() - t0)
            finally:
                _restore(path, original)
                time.sleep(1.0)
                version = _wait_version(port, version, 900)   # the restore rebuilds too
            results.append((label, times))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        log.close()
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["test", "real"])
    ap.add_argument("--typical-only", action="store_true",
                    help="skip the expensive edits (on a loaded machine they take minutes)")
    args = ap.parse_args()
    # a TERM (or an INT, which a background job ignores) still restores the edited files
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("interrupted"))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "code"), env.get("PYTHONPATH")]))
    env.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))
    runs = []
    if args.only in (None, "test"):
        tmp = Path(tempfile.mkdtemp(prefix="bench-authoring-"))
        deck = tmp / "partial"
        shutil.copytree(REPO / "tests" / "deckbuild" / "decks" / "partial", deck)
        edits = TEST_EDITS[:1] if args.typical_only else TEST_EDITS
        runs.append(("test deck (8 cells)", measure(deck, "deck.qmd", edits, args.repeats, env)))
        shutil.rmtree(tmp, ignore_errors=True)
    if args.only in (None, "real"):
        runs.append(("real deck (slides/index.qmd)",
                     measure(REPO, "slides/index.qmd",
                             REAL_EDITS[:1] if args.typical_only else REAL_EDITS,
                             args.repeats, env)))
    print(f"save -> preview rebuilt (median of {args.repeats}; the page reloads within 0.7 s more)")
    for deck_label, results in runs:
        for label, times in results:
            print(f"  {deck_label:<30} {label:<42} {statistics.median(times):6.1f} s  "
                  f"(each: {', '.join(f'{t:.1f}' for t in times)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
