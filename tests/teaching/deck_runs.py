"""The trained models of the deck, from the definitions its chapters use
(``tt.PRONOUN_MODEL`` and ``tt.DATES_MODEL`` in ``transformer_lab.teaching.deck_models``),
so the tests assert the numbers the slides show. They share the deck's cache
(.cache/transformer_lab): after a build they load in a second, and a test run leaves the
build a cache hit."""

from __future__ import annotations

from pathlib import Path

import transformer_lab as tl
from transformer_lab import teaching as tt

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "slides" / "chapters"
CACHE = ROOT / ".cache" / "transformer_lab"


def _in_deck_cache(model: tt.DeckModel) -> tl.RunResult:
    tt.set_cache_directory(CACHE)
    try:
        return model.result()
    finally:
        tt.set_cache_directory(None)


def pronoun_run() -> tl.RunResult:
    return _in_deck_cache(tt.PRONOUN_MODEL)


def dates_run() -> tl.RunResult:
    return _in_deck_cache(tt.DATES_MODEL)
