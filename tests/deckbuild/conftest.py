"""Fixtures for the deck renderer's tests (code/deckbuild), and the ``deck`` marker.

Every test here needs the deck toolchain: the ``[deck]`` extra (Jupyter, pandoc,
Playwright), the npm packages (reveal.js, KaTeX, dart-sass) and Debian's Chromium. Each
test is marked ``deck``. Where the toolchain is missing (someone who installed only the
package with ``pip install -e ".[test]"``) they are skipped with a message saying how to
run them; ``make test`` (and CI) sets ``DECK_TOOLCHAIN=required``, which turns a missing
piece into a failure, so nothing is skipped there. ``pytest -m "not deck"`` deselects them.

Every test deck lives in ``decks/<name>/`` (its own small Quarto project) and is copied
to a temporary directory before it is built, so builds never touch the repository.
The browser tests build their decks once per session.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from deck_helpers import REPO, Preview, copy_deck

HERE = Path(__file__).parent
PYTHON_PACKAGES = ("yaml", "nbclient", "nbformat", "ipykernel", "jupyter_client", "pypandoc",
                   "playwright", "pypdf")
NPM_PACKAGES = ("reveal.js", "katex", "sass")
CHROMIUM = Path(os.environ.get("DECKBUILD_CHROMIUM", "/usr/bin/chromium"))
HOW_TO_RUN = ("run `make test` (it installs them), or `pip install -e \".[test,deck]\"`, "
              "`npm ci` and `apt-get install chromium`, then `pytest -m deck`")


def missing_python_packages() -> list[str]:
    return [name for name in PYTHON_PACKAGES if importlib.util.find_spec(name) is None]


def missing_toolchain() -> list[str]:
    """What of the deck toolchain this machine lacks, in words."""
    missing = []
    if missing_python_packages():
        missing.append(f"Python packages {', '.join(missing_python_packages())} (the [deck] extra)")
    npm = [name for name in NPM_PACKAGES if not (REPO / "node_modules" / name).is_dir()]
    if npm:
        missing.append(f"npm packages {', '.join(npm)} (npm ci)")
    if shutil.which("node") is None:
        missing.append("node")
    if not CHROMIUM.exists():
        missing.append(f"Chromium at {CHROMIUM}")
    return missing


MISSING = missing_toolchain()
REQUIRED = os.environ.get("DECK_TOOLCHAIN") == "required"
REASON = f"deck toolchain missing ({'; '.join(MISSING)}): {HOW_TO_RUN}"

# Builds of the copied test decks find reveal.js, KaTeX and sass in the repository's
# node_modules/, wherever pytest runs from (subprocesses inherit it).
os.environ.setdefault("DECKBUILD_NODE_MODULES", str(REPO / "node_modules"))


class ToolchainMissing(pytest.Item):
    """Stands for a test file that cannot even be imported without the [deck] extra."""

    def runtest(self):
        if REQUIRED:
            pytest.fail(REASON, pytrace=False)
        pytest.skip(REASON)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}: deck tests"


class UnimportableDeckTests(pytest.File):
    def collect(self):
        yield ToolchainMissing.from_parent(self, name="deck tests")


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    """Without the [deck] extra the test files cannot be imported: collect each as one
    placeholder test that is skipped (or fails under DECK_TOOLCHAIN=required)."""
    if missing_python_packages() and module_path.name.startswith("test_"):
        return UnimportableDeckTests.from_parent(parent, path=module_path)
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE not in Path(item.path).parents:
            continue
        item.add_marker(pytest.mark.deck)
        if MISSING and not isinstance(item, ToolchainMissing):
            item.add_marker(pytest.mark.skipif(not REQUIRED, reason=REASON))
            if REQUIRED:
                item.add_marker(pytest.mark.usefixtures("_require_toolchain"))


@pytest.fixture
def _require_toolchain():
    pytest.fail(REASON, pytrace=False)


@pytest.fixture
def deck(tmp_path):
    """deck("features") -> path of a fresh copy of tests/deckbuild/decks/features."""
    return lambda name: copy_deck(name, tmp_path)


class Lines(list):
    """An emitter that records progress lines (accepts print's `end`)."""

    def __call__(self, text: str, end: str = "\n") -> None:
        self.append(text)


@pytest.fixture
def lines():
    return Lines()


@pytest.fixture
def preview(tmp_path):
    """preview(target) -> a running `deckbuild preview` (stopped after the test)."""
    started = []

    def start(target: Path, port: int | None = None) -> Preview:
        started.append(Preview(target, tmp_path / f"console-{len(started)}.txt", port))
        return started[-1]
    yield start
    for p in started:
        if p.proc.poll() is None:
            p.stop()
