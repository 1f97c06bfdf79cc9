"""The trained models of the deck, defined once (``tt.deck_models``), and the chapters
that show them: each chapter gets them from there and defines every name it reads, so it
runs in a kernel of its own after the document's set-up cells."""

from __future__ import annotations

import builtins
import re
import symtable

import pytest
import torch

import transformer_lab as tl
from transformer_lab import teaching as tt

from deck_runs import CHAPTERS, ROOT

TINY = dict(task="copy", d_model=16, num_heads=2, d_ff=32, num_layers=1, num_train=200, num_eval=10,
            max_tokens=128, warmup_steps=5, device="cpu", seed=1)


@pytest.fixture
def cache_dir(tmp_path):
    tt.set_cache_directory(tmp_path)
    yield tmp_path
    tt.set_cache_directory(None)


# --------------------------------------------------------------------------- the definitions


def chapter_code() -> dict[str, str]:
    """Each included chapter's code, as the renderer reads it."""
    code: dict[str, str] = {}
    for cell in deck_cells():
        if cell.chapter is not None:
            code[cell.chapter.name] = code.get(cell.chapter.name, "") + cell.code + "\n"
    return code


def test_the_chapters_get_each_trained_model_from_its_single_definition():
    code = chapter_code()
    uses = {"pronoun_model()": ("01-attention.qmd", "04-layers.qmd", "07-decoding.qmd", "08a-explorer.qmd"),
            "dates_model()": ("07-decoding.qmd", "08a-explorer.qmd", "a6-training.qmd")}
    for call, chapters in uses.items():
        for chapter in chapters:
            assert f"tt.{call}" in code[chapter], chapter
    assert "tt.DATES_MODEL" in code["06-training.qmd"]  # shown with its settings
    for chapter, text in code.items():  # no chapter trains a model of its own
        assert "RunConfig(" not in text and not re.search(r"tt\.cached\(\"(pronoun|dates)-model", text), chapter


def test_the_deck_models_are_cached_under_the_names_the_deck_always_used():
    assert (tt.PRONOUN_MODEL.name, tt.DATES_MODEL.name) == ("pronoun-model", "dates-model")
    for model in (tt.PRONOUN_MODEL, tt.DATES_MODEL):  # a step budget: the same model on any machine
        assert model.config.steps is not None and model.config.time_budget is None
        assert model.config.threads == 1  # the deck's kernels run on one thread
    assert tt.DATES_MODEL.average_last == 5 and tt.PRONOUN_MODEL.average_last == 1


def test_a_deck_model_is_refused_unless_it_is_step_budgeted_and_in_memory():
    with pytest.raises(TypeError, match="config must be a RunConfig, got dict"):
        tt.DeckModel("m", {"task": "copy"})
    with pytest.raises(ValueError, match=r"config must stop after a number of steps.*steps=None, time_budget=5"):
        tt.DeckModel("m", tl.RunConfig(task="copy", time_budget=5))
    with pytest.raises(ValueError, match="config.output_dir must be None .* got 'runs/x'"):
        tt.DeckModel("m", tl.RunConfig(task="copy", steps=3, output_dir="runs/x"))
    with pytest.raises(ValueError, match="average_last must be a positive int, got 0"):
        tt.DeckModel("m", tl.RunConfig(task="copy", steps=3), average_last=0)


def test_facts_state_the_settings_in_words():
    config = tl.RunConfig(task="copy", steps=1200, num_train=5000, num_eval=30, eval_interval=100,
                          eval_examples=50, max_tokens=512, seed=3)
    assert tt.DeckModel("m", config, average_last=3).facts() == [
        "`copy` task, seed 3", "1,200 steps, batches of at most 512 tokens", "5,000 training examples",
        "30 validation examples every 100 steps", "30 test examples", "the last 3 checkpoints averaged"]
    # validating every 200 steps (the recipe's) in a run of 150: it never validates
    assert tt.PRONOUN_MODEL.facts() == [
        "`pronoun` task, seed 0", "150 steps, batches of at most 2,048 tokens", "3,000 training examples",
        "400 test examples"]


# --------------------------------------------------------------------------- training through the cache


def test_a_deck_model_trains_once_and_keeps_the_thread_count(cache_dir, monkeypatch):
    model = tt.DeckModel("tiny-model", tl.RunConfig(**TINY, steps=2, threads=1))
    calls = []
    fit = tt.deck_models.fit
    monkeypatch.setattr(tt.deck_models, "fit", lambda config: calls.append(config) or fit(config))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        first, second = model.result(), model.result()
        assert torch.get_num_threads() == 2  # fit set it to 1 for the run
    finally:
        torch.set_num_threads(threads)
    assert len(calls) == 1 and calls[0] == model.config
    assert [p.name.split("-")[:2] for p in cache_dir.glob("*.pt")] == [["tiny", "model"]]
    assert second.step == first.step == 2
    assert second.data.test == first.data.test and len(second.data.train) == 200


def test_a_deck_model_that_averages_trains_in_a_directory_it_removes(cache_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    model = tt.DeckModel("averaged", tl.RunConfig(**TINY, steps=4, eval_interval=2), average_last=2)
    result = model.result()
    assert result.averaged_steps == [2, 4] and result.test_averaged is not None
    assert list((tmp_path / "tmp").iterdir()) == []


# --------------------------------------------------------------------------- one kernel per chapter


def module_names(code: str) -> tuple[set, set]:
    """(names a cell binds at module level, module-level names it reads, in any scope)."""
    top = symtable.symtable(code, "<cell>", "exec")
    binds = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    reads = set()

    def visit(table, nested):
        for s in table.get_symbols():
            if s.is_referenced() and (not nested or (s.is_global() and not s.is_assigned())):
                reads.add(s.get_name())
        for child in table.get_children():
            visit(child, True)

    visit(top, False)
    return binds, reads


def deck_cells():
    """The deck's cells as the renderer reads them (``deckbuild.source``: includes expanded,
    each cell knowing its chapter and whether it is a setup cell)."""
    pytest.importorskip("yaml", reason="reading the deck needs the [deck] extra (PyYAML)")
    from deckbuild.source import parse

    return parse(ROOT / "slides" / "index.qmd", ROOT).cells


def setup_names() -> set:
    return set().union(*(module_names(c.code)[0] for c in deck_cells() if c.setup))


def test_the_setup_cells_define_what_the_chapters_may_take_for_granted():
    assert {"torch", "F", "Figure", "tl", "tt", "show_table", "show_math"} <= setup_names()


@pytest.mark.parametrize("chapter", sorted(p.name for p in CHAPTERS.glob("*.qmd")))
def test_each_chapter_defines_every_name_it_reads(chapter):
    """Statically, before any build (the renderer stops at the first such read at build
    time, naming both places)."""
    cells = [c for c in deck_cells() if c.chapter is not None and c.chapter.name == chapter]
    if not cells:
        pytest.skip(f"{chapter} is not included in slides/index.qmd")
    known = setup_names() | set(dir(builtins))
    missing = []
    for cell in cells:
        binds, reads = module_names(cell.code)
        known |= binds
        missing += sorted(reads - known)
    assert missing == [], f"{chapter} reads names another chapter defines"
