"""The command line: help, project builds, progress output and the speed targets."""

import time

from conftest import run_cli


def test_help_lists_commands_and_options():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for word in ("render", "preview", "check"):
        assert word in proc.stdout
    proc = run_cli("render", "--help")
    assert "--html-only" in proc.stdout and "--no-cache" in proc.stdout
    assert "--port" in run_cli("preview", "--help").stdout


def test_project_build_progress_and_speed(deck, browser_ready):
    """Cold build of the 10-slide feature deck (HTML + PDF) < 15 s; warm rebuild < 5 s."""
    root = deck("features")
    t = time.perf_counter()
    cold = run_cli("render", str(root))
    cold_s = time.perf_counter() - t
    assert cold.returncode == 0, cold.stderr
    for step in ("read", "execute", "markdown", "theme", "pandoc", "pdf", "cell 1/7"):
        assert step in cold.stderr
    assert (root / "_output" / "deck.html").exists() and (root / "_output" / "deck.pdf").exists()
    t = time.perf_counter()
    warm = run_cli("render", str(root))
    warm_s = time.perf_counter() - t
    assert warm.returncode == 0 and "up to date" in warm.stderr
    print(f"cold build {cold_s:.2f}s, warm rebuild {warm_s:.2f}s")
    assert cold_s < 15 and warm_s < 5
