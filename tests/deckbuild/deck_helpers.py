"""Paths and helpers for the deck renderer's tests (imported by test files and by
conftest.py; a module of its own because tests/ has a second conftest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
DECKS = HERE / "decks"
REPO = HERE.parents[1]


def copy_deck(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(DECKS / name, target, ignore=shutil.ignore_patterns("_output", ".cache"))
    return target


def run_cli(*args: str, cwd: Path | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "code"), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "deckbuild", *args], cwd=cwd or REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)
