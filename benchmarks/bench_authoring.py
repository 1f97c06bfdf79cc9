"""Authoring speed: the time from saving an edit to the open preview page showing it
(issue 18's target for a one-cell edit: at most 10 s on the project machine; issue 22's: text 5 s).

It starts ``deckbuild preview`` on a deck, waits for its first build, opens the page in
Chromium (as an author has it open), then for each edit saves the file (atomically, as
editors do) and times until the page itself shows the change: the preview rebuilt, the
page reloaded and its slides contain the edit's marker (no error box). A text edit adds
a word to a line of markdown; a cell edit adds ``print("<marker>")`` to one cell, so the
cell's chapter runs again and pandoc runs. Each save has a new
marker, so each is a real change; the file is restored afterwards. Medians and ranges
over ``--repeats`` saves.

Decks: the test deck tests/deckbuild/decks/chapters (copied to a temporary folder; the
default) and, with ``--deck real`` or ``--deck both``, the real deck slides/index.qmd
(edited in place, then restored; its first build may run every cell when the cache is cold).

    .venv/bin/python benchmarks/bench_authoring.py [--repeats 5] [--deck test|real|both]
                                                   [--typical-only]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
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
sys.path.insert(0, str(REPO / "code"))

# (label, file relative to the project, the line to edit, kind: "text" or "cell", typical)
TEST_EDITS = [("text: a slide title", "chapters/01-names.qmd", "## An alias", "text", True),
              ("cell: one cell (its chapter runs)", "chapters/01-names.qmd", "b = a", "cell", True),
              ("cell: the setup cell (every chapter)", "deck.qmd", "import statepkg", "cell", False)]
REAL_EDITS = [("text: 01-attention.qmd, a bullet", "slides/chapters/01-attention.qmd",
               "- [$Q$]{.query} $(T, d_k)$: one query per output position", "text", True),
              ("cell: 01-attention.qmd, one cell", "slides/chapters/01-attention.qmd",
               "head = tt.one_head_steps(x, w_q, w_k, w_v)", "cell", True),
              ("cell: a4-layers.qmd, a cell that builds a model", "slides/chapters/a4-layers.qmd",
               "ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=20)", "cell", True),
              ("cell: a9-speed.qmd, the speed table (timings cached by tt.cached)",
               "slides/chapters/a9-speed.qmd",
               "result = tt.deck_models.speed_against_pytorch()   # bench_speed.py --deck",
               "cell", False)]
# in the page: whether the slides contain the marker, and the error box's text if shown
SHOWS = """(marker) => {
  const slides = document.querySelector('.reveal .slides');
  const box = document.getElementById('deckbuild-error');
  return {found: !!slides && slides.textContent.includes(marker),
          error: box && box.getClientRects().length ? box.textContent : ''};
}"""
BUILD_TOTAL = re.compile(r"^\s+total\s+([\d.]+)s$", re.M)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _state(port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/__deckbuild/version", timeout=2) as r:
            return json.loads(r.read())
    except OSError:
        return None


def _wait_first_build(port: int, proc: subprocess.Popen, log: Path, limit: float) -> None:
    end = time.perf_counter() + limit
    while time.perf_counter() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the preview exited:\n{log.read_text()}")
        state = _state(port)
        if state and state.get("generation", 0) >= 1:
            if state["error"]:
                raise RuntimeError(f"the first build failed:\n{state['error']}")
            return
        time.sleep(0.2)
    raise TimeoutError(f"the preview's first build took more than {limit:.0f} s")


def _save(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as editors do (a new file moved over the old one), with
    TERM/INT held off meanwhile, so the file is never left half written."""
    held = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        tmp = path.with_name(f".{path.name}.bench-save")
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def _wait_page(page, marker: str, present: bool, limit: float) -> float:
    """Seconds until the page's slides contain ``marker`` (or no longer do)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        try:
            seen = page.evaluate(SHOWS, marker)
        except Exception as exc:  # noqa: BLE001 - the page is reloading: ask again
            if "context" not in str(exc) and "navigat" not in str(exc):
                raise
            seen = {"found": not present, "error": ""}
        if seen["error"]:
            raise RuntimeError(f"the build failed:\n{seen['error']}")
        if seen["found"] == present:
            return time.perf_counter() - t0
        time.sleep(0.02)
    raise TimeoutError(f"the page did not show the change within {limit:.0f} s")


def _edited(original: str, line: str, kind: str, marker: str) -> str:
    if line not in original:
        raise ValueError(f"edit line {line!r} not found in the file (was it changed?)")
    new = f"{line} {marker}" if kind == "text" else f'{line}\nprint("{marker}")'
    return original.replace(line, new, 1)


def _time_edit(page, path: Path, edit: tuple, repeats: int, log: Path) -> dict:
    """Save ``repeats`` versions of one edit; each: seconds until the page shows it, and
    the seconds the preview's build took (its console's "total")."""
    label, _, line, kind, _ = edit
    original = path.read_text()
    shown, built, marker = [], [], ""
    try:
        for n in range(repeats):
            marker = f"bench{n}x{secrets.token_hex(3)}"
            before = len(BUILD_TOTAL.findall(log.read_text()))
            time.sleep(0.5)                              # settle, as an author would
            _save(path, _edited(original, line, kind, marker))
            shown.append(_wait_page(page, marker, True, 900))
            totals = BUILD_TOTAL.findall(log.read_text())[before:]
            built.append(sum(map(float, totals)))
    finally:
        _save(path, original)
        if marker:
            _wait_page(page, marker, False, 900)          # the restore rebuilds too
    return {"label": label, "shown": shown, "built": built}


def measure(cwd: Path, target: str, edits: list, repeats: int, env: dict) -> list[dict]:
    from deckbuild import browser

    port = _free_port()
    log = Path(tempfile.mkdtemp(prefix="bench-preview-")) / "preview.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "preview", "--no-browser",
                                 "--port", str(port), target], cwd=cwd, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_first_build(port, proc, log, 1800)
        url = f"http://127.0.0.1:{port}/{Path(target).with_suffix('.html').as_posix()}"
        with browser.browser() as ctx:
            page = ctx.new_page()
            page.goto(url, wait_until="load")
            page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=60000)
            return [_time_edit(page, cwd / edit[1], edit, repeats, log) for edit in edits]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def _summary(seconds: list[float]) -> str:
    return (f"{statistics.median(seconds):6.2f} s  ({min(seconds):.2f}-{max(seconds):.2f}; "
            f"each: {', '.join(f'{t:.2f}' for t in seconds)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5, help="saves per edit (default 5)")
    ap.add_argument("--deck", "--only", choices=["test", "real", "both"], default="test",
                    help="the test deck (default), the real deck slides/index.qmd, or both")
    ap.add_argument("--typical-only", action="store_true",
                    help="skip the expensive edits (on a loaded machine they take minutes)")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error(f"--repeats must be at least 1, got {args.repeats}")
    # a TERM (or an INT, which a background job ignores) still restores the edited files
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("interrupted"))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "code"), env.get("PYTHONPATH")]))
    env.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))
    runs = []
    if args.deck in ("test", "both"):
        tmp = Path(tempfile.mkdtemp(prefix="bench-authoring-"))
        deck = tmp / "chapters"
        shutil.copytree(REPO / "tests" / "deckbuild" / "decks" / "chapters", deck)
        edits = [e for e in TEST_EDITS if e[4] or not args.typical_only]
        runs.append(("test deck (3 chapters)", measure(deck, "deck.qmd", edits, args.repeats, env)))
        shutil.rmtree(tmp, ignore_errors=True)
    if args.deck in ("real", "both"):
        edits = [e for e in REAL_EDITS if e[4] or not args.typical_only]
        runs.append(("real deck (slides/index.qmd)",
                     measure(REPO, "slides/index.qmd", edits, args.repeats, env)))
    print(f"save -> the page shows the change, in Chromium (median (range) of {args.repeats} "
          "saves); of which the preview's build")
    for deck_label, results in runs:
        for r in results:
            print(f"  {deck_label:<30} {r['label']:<44} page {_summary(r['shown'])}")
            print(f"  {'':<30} {'':<44} build {_summary(r['built'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
