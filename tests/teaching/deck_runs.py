"""The trained models of the deck, computed exactly as its cells compute them (same
configs, same cache names), so the tests assert the numbers the slides show. They share
the deck's cache (.cache/transformer_lab): after a build they load in a second, and a
test run leaves the build a cache hit. ``test_the_deck_trains_these_configs`` keeps the
slides' lines and these configs equal."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

import transformer_lab as tl
from transformer_lab import teaching as tt

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "slides" / "chapters"
CACHE = ROOT / ".cache" / "transformer_lab"

PRONOUN_LINES = (
    'config = tl.RunConfig(task="pronoun", steps=150, num_train=3000, num_eval=400, seed=0, threads=1)',
    'pronoun = tt.cached("pronoun-model", lambda: tl.fit(config), inputs={"config": config})',
)
PRONOUN_CONFIG = tl.RunConfig(task="pronoun", steps=150, num_train=3000, num_eval=400, seed=0, threads=1)
DATES_LINES = (
    'config = tl.RunConfig(task="dates", steps=300, eval_interval=25, eval_examples=200, seed=0, threads=1)',
    "return tl.fit(config.replace(output_dir=run_dir, average_last=5))",
    'result = tt.cached("dates-model", train, inputs={"config": config})',
)
DATES_CONFIG = tl.RunConfig(task="dates", steps=300, eval_interval=25, eval_examples=200, seed=0, threads=1)


def _in_deck_cache(name: str, compute, config: tl.RunConfig):
    threads = torch.get_num_threads()
    tt.set_cache_directory(CACHE)
    try:
        return tt.cached(name, compute, inputs={"config": config})
    finally:
        tt.set_cache_directory(None)
        torch.set_num_threads(threads)


def pronoun_run() -> tl.RunResult:
    return _in_deck_cache("pronoun-model", lambda: tl.fit(PRONOUN_CONFIG), PRONOUN_CONFIG)


def dates_run() -> tl.RunResult:
    def train():
        with tempfile.TemporaryDirectory() as run_dir:
            return tl.fit(DATES_CONFIG.replace(output_dir=run_dir, average_last=5))

    return _in_deck_cache("dates-model", train, DATES_CONFIG)


def pronoun_test_split() -> list[tuple[str, str]]:
    c = PRONOUN_CONFIG
    return tl.make_task("pronoun", seed=c.seed, num_train=c.num_train, num_validation=c.num_eval,
                        num_test=c.num_eval).test
