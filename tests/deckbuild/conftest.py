"""Fixtures for the deck renderer's tests (code/deckbuild).

Every test deck lives in ``decks/<name>/`` (its own small Quarto project) and is copied
to a temporary directory before it is built, so builds never touch the repository.
The browser tests build their decks once per session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DECKS = HERE / "decks"
REPO = HERE.parents[1]


def copy_deck(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(DECKS / name, target, ignore=shutil.ignore_patterns("_output", ".cache"))
    return target


@pytest.fixture
def deck(tmp_path):
    """deck("features") -> path of a fresh copy of tests/deckbuild/decks/features."""
    return lambda name: copy_deck(name, tmp_path)


def run_cli(*args: str, cwd: Path | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "code"), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "deckbuild", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="session")
def browser_ready():
    if not Path("/usr/bin/chromium").exists() or not (REPO / "node_modules" / "reveal.js").exists():
        pytest.fail("browser pieces missing: run `make test` (it installs chromium and npm packages)")
    return True


class Lines(list):
    """An emitter that records progress lines (accepts print's `end`)."""

    def __call__(self, text: str, end: str = "\n") -> None:
        self.append(text)


@pytest.fixture
def lines():
    return Lines()
