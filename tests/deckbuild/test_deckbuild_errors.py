"""Failure paths end to end, through the command line: clear errors, non-zero exit, the
last good deck left untouched, no kernel left behind."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deck_helpers import REPO, run_cli


def test_raising_cell_reports_file_line_slide_source_traceback(deck):
    root = deck("errors")
    proc = run_cli("render", str(root / "raising.qmd"), "--html-only")
    assert proc.returncode == 1
    err = proc.stderr
    assert "raising.qmd:7: cell 1 raised ValueError: boom from the cell" in err
    assert "slide: The failing slide" in err
    assert 'raise ValueError("boom from the cell")' in err and "x = 1" in err
    assert "Traceback" in err or "----> " in err
    assert not (root / "_output" / "raising.html").exists()


def test_failed_build_leaves_the_last_good_deck_untouched(deck):
    root = deck("errors")
    good = root / "good.qmd"
    assert run_cli("render", str(good), "--html-only").returncode == 0
    html = root / "_output" / "good.html"
    before = html.read_bytes()
    good.write_text(good.read_text().replace('print("good output")', "1 / 0"))
    proc = run_cli("render", str(good), "--html-only")
    assert proc.returncode == 1 and "ZeroDivisionError" in proc.stderr
    assert html.read_bytes() == before
    assert [p.name for p in (root / "_output").iterdir()] == ["good.html"]


@pytest.mark.parametrize("name, location, message", [
    ("missing-include.qmd", "missing-include.qmd:7", "included file not found"),
    ("unclosed-fence.qmd", "unclosed-fence.qmd:7", "unclosed cell fence"),
    ("bad-yaml.qmd", "bad-yaml.qmd:", "malformed YAML"),
    ("bad-scss.qmd", "broken.scss:5", "theme does not compile"),
])
def test_bad_input_is_a_clear_error_with_file_and_line(deck, name, location, message):
    root = deck("errors")
    proc = run_cli("render", str(root / name), "--html-only")
    assert proc.returncode == 1
    assert location in proc.stderr and message in proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr
    assert not (root / "_output").exists() or not any((root / "_output").iterdir())


def test_missing_image_is_a_warning_with_file_and_line_and_the_deck_builds(deck):
    """As under Quarto, a missing image does not stop the build; the warning names the
    file, the line and the image."""
    root = deck("errors")
    proc = run_cli("render", str(root / "missing-image.qmd"), "--html-only")
    assert proc.returncode == 0, proc.stderr
    assert "missing-image.qmd:9: warning: image not found: img/missing.png" in proc.stderr
    assert "pandoc could not fetch" not in proc.stderr     # said once, with its line
    assert (root / "_output" / "missing-image.html").exists()


def test_unknown_cell_option_is_a_warning_and_the_deck_still_builds(deck):
    root = deck("errors")
    proc = run_cli("render", str(root / "unknown-option.qmd"), "--html-only")
    assert proc.returncode == 0, proc.stderr
    assert ("unknown-option.qmd:9: warning: cell option 'fig-colour' is not implemented "
            "by deckbuild and is ignored") in proc.stderr
    assert (root / "_output" / "unknown-option.html").exists()


def test_missing_theme_file_from_project_config(deck):
    root = deck("bad-theme")
    proc = run_cli("render", str(root / "deck.qmd"), "--html-only")
    assert proc.returncode == 1 and "_quarto.yml:5: theme file not found: missing_theme.scss" in proc.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_leaves_no_kernel_behind(deck, sig):
    root = deck("interrupt")
    env = dict(os.environ, PYTHONPATH=str(REPO / "code"))
    proc = subprocess.Popen([sys.executable, "-m", "deckbuild", "render", str(root / "deck.qmd"),
                             "--html-only"], stderr=subprocess.PIPE, text=True, env=env)
    pid, seen = None, ""
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        seen += line
        m = re.search(r"kernel ready \(pid (\d+)\)", line)
        if m:
            pid = int(m.group(1))
        if pid:
            break
    assert pid and _alive(pid), seen
    time.sleep(1.5)  # the cell (a long sleep) is running now; its line ends only when it does
    proc.send_signal(sig)
    rest = proc.communicate(timeout=30)[1]
    assert proc.returncode == 130, seen + rest
    for _ in range(50):
        if not _alive(pid):
            break
        time.sleep(0.1)
    assert not _alive(pid), f"kernel {pid} still running"
