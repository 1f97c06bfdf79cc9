"""Fixtures for the deck renderer's tests (code/deckbuild).

Every test deck lives in ``decks/<name>/`` (its own small Quarto project) and is copied
to a temporary directory before it is built, so builds never touch the repository.
The browser tests build their decks once per session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from deck_helpers import DECKS, REPO, copy_deck  # noqa: F401


@pytest.fixture
def deck(tmp_path):
    """deck("features") -> path of a fresh copy of tests/deckbuild/decks/features."""
    return lambda name: copy_deck(name, tmp_path)


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
