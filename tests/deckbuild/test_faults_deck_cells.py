"""Fault cases (issue 11): a cell that never ends, and Ctrl-C while a cell runs."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deck_helpers import REPO, run_cli

TRACEBACK = "Traceback (most recent call last)"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


def _kernel_pid(text: str) -> int:
    m = re.search(r"kernel ready \(pid (\d+)\)", text)
    assert m, text
    return int(m.group(1))


def _gone(pid: int) -> bool:
    for _ in range(50):
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("how", ["project", "command line"])
def test_a_cell_that_never_ends_stops_at_the_cell_timeout(deck, how):
    """Quarto has no cell timeout (its Jupyter engine waits for ever); ours is
    `deckbuild: cell-timeout` in _quarto.yml or --cell-timeout, 600 s by default."""
    root = deck("interrupt")
    args = ["render", str(root / "deck.qmd"), "--html-only"]
    if how == "project":
        with open(root / "_quarto.yml", "a") as f:
            f.write("deckbuild:\n  cell-timeout: 2\n")
    else:
        args += ["--cell-timeout", "2"]
    t = time.perf_counter()
    proc = run_cli(*args, timeout=60)
    assert time.perf_counter() - t < 40, "the cell (a 60 s sleep) was not stopped"
    assert proc.returncode == 1 and TRACEBACK not in proc.stderr, proc.stderr
    assert ("deck.qmd:7: cell 1 did not finish within 2 s and was stopped; make it faster, "
            "or raise the limit with `deckbuild: cell-timeout: <seconds>`") in proc.stderr
    assert "slide: Slow" in proc.stderr and "time.sleep(60)" in proc.stderr
    assert _gone(_kernel_pid(proc.stderr)), "kernel still running"
    assert not (root / "_output" / "deck.html").exists()


@pytest.mark.parametrize("value, message", [
    ("-1", "option 'deckbuild: cell-timeout' must be a positive number or one of false, got -1"),
    ("true", "option 'deckbuild: cell-timeout' must be a positive number or one of false, got True"),
])
def test_a_bad_cell_timeout_is_an_error(deck, value, message):
    root = deck("interrupt")
    with open(root / "_quarto.yml", "a") as f:
        f.write(f"deckbuild:\n  cell-timeout: {value}\n")
    proc = run_cli("render", str(root / "deck.qmd"), "--html-only")
    assert proc.returncode == 1 and f"_quarto.yml:9: {message}" in proc.stderr, proc.stderr


def test_a_bad_cell_timeout_on_the_command_line_is_a_usage_error(deck):
    proc = run_cli("render", str(deck("interrupt") / "deck.qmd"), "--cell-timeout", "soon")
    assert proc.returncode == 2 and TRACEBACK not in proc.stderr
    assert "expected a number of seconds (0: no limit), got 'soon'" in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_while_a_cell_runs_prints_no_asyncio_traceback(deck, sig):
    """Before: asyncio printed 'unhandled exception during asyncio.run() shutdown' and
    nbclient's DeadKernelError traceback above 'interrupted'."""
    root = deck("interrupt")
    env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
    proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "render", str(root / "deck.qmd"),
                             "--html-only"], stderr=subprocess.PIPE, text=True, env=env)
    seen = ""
    deadline = time.time() + 60
    while time.time() < deadline and "kernel ready" not in seen:
        seen += proc.stderr.readline()
    pid = _kernel_pid(seen)
    time.sleep(1.5)   # the cell (a 60 s sleep) is running now
    proc.send_signal(sig)
    rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 130, seen + rest
    assert rest.strip().endswith("interrupted"), rest
    for noise in (TRACEBACK, "asyncio", "DeadKernelError", "Task"):
        assert noise not in rest, rest
    assert _gone(pid), f"kernel {pid} still running"


def test_ctrl_c_kills_every_chapters_kernel(deck):
    """Chapters run in kernels of their own, two at a time here: Ctrl-C kills them all."""
    root = deck("chapters")
    for chapter in ("01-names.qmd", "02-functions.qmd"):
        path = root / "chapters" / chapter
        path.write_text(path.read_text() + "\n```{python}\nimport time\ntime.sleep(60)\n```\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
    proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "render", str(root / "deck.qmd"),
                             "--html-only", "--jobs", "2"], stderr=subprocess.PIPE, text=True,
                            env=env)
    seen, pids = "", set()
    deadline = time.time() + 60
    while time.time() < deadline and not {"01-names.qmd", "02-functions.qmd"} <= {
            m.group(1) for m in re.finditer(r"(\S+): kernel ready", seen)}:
        seen += proc.stderr.readline()
    pids = {int(p) for p in re.findall(r"kernel ready \(pid (\d+)\)", seen)}
    time.sleep(1.5)   # both sleeps are running now
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 130 and rest.strip().endswith("interrupted"), seen + rest
    assert TRACEBACK not in rest, rest
    assert all(_gone(pid) for pid in pids), f"kernels still running among {pids}"
