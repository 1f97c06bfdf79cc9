"""The command line: help, project builds, progress output and the speed targets."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from deck_helpers import REPO, run_cli


def test_help_lists_commands_and_options():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for word in ("render", "preview", "check"):
        assert word in proc.stdout
    proc = run_cli("render", "--help")
    assert "--html-only" in proc.stdout and "--no-cache" in proc.stdout
    assert "--port" in run_cli("preview", "--help").stdout


def test_project_build_shows_progress_and_a_rebuild_runs_nothing(deck):
    """A cold build of the feature deck (HTML + PDF) names every stage and cell as it goes;
    rebuilding it unchanged is "up to date" and runs no cell. (How long builds take is
    measured by benchmarks/bench_authoring.py, never asserted here: the machine is shared.)"""
    root = deck("features")
    cold = run_cli("render", str(root))
    assert cold.returncode == 0, cold.stderr
    for step in ("read", "execute", "markdown", "theme", "pandoc", "pdf", "cell 1/7"):
        assert step in cold.stderr
    assert (root / "_output" / "deck.html").exists() and (root / "_output" / "deck.pdf").exists()
    warm = run_cli("render", str(root))
    assert warm.returncode == 0 and "up to date" in warm.stderr
    assert "cell 1/7" not in warm.stderr


def test_preview_serves_on_localhost_and_rebuilds_on_change(deck):
    root = deck("features")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
    proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "preview", str(root), "--no-browser",
                             "--port", str(port)], stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"

    def version():
        with urllib.request.urlopen(f"{base}/__deckbuild/version", timeout=2) as r:
            return json.load(r)["version"]
    try:
        deadline, first = time.time() + 60, None
        while time.time() < deadline and first is None:
            try:
                first = version()
            except OSError:
                time.sleep(0.3)
        assert first is not None, "preview server did not start"
        with urllib.request.urlopen(f"{base}/deck.html", timeout=5) as r:
            assert b"Feature deck" in r.read()
        part = root / "parts" / "one.qmd"
        part.write_text(part.read_text().replace("Lists and fragments", "Lists, edited"))
        deadline = time.time() + 60
        while time.time() < deadline and version() == first:
            time.sleep(0.3)
        with urllib.request.urlopen(f"{base}/deck.html", timeout=5) as r:
            assert b"Lists, edited" in r.read()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
