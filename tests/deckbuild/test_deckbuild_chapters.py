"""The chapter as the unit of execution and caching (code/deckbuild/execute.py, units.py).

The test deck ``decks/chapters`` has three chapters built on nine patterns that a static
reading of Python cells gets wrong (an alias, a class attribute read through an instance,
a function that mutates a global, ``global``, module state mutated by a method, a file
written by one cell and read by another, a generator reading a global that changes later,
a ``with`` block binding names, random draws). The differential test edits every chapter,
builds incrementally, and compares the HTML byte for byte with a ``--no-cache`` build of
the same sources; then undoes the edit and compares again (one edit per pattern).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deckbuild.build import BuildSettings, build_document
from deckbuild.errors import DeckError

# (chapter file, text in it, the edit): one edit per pattern, each changes what it prints
EDITS = [
    ("01-names.qmd", "a.append(3)", "a.append(30)"),                 # an alias
    ("01-names.qmd", "Counter.step = 2", "Counter.step = 5"),        # a class attribute
    ("01-names.qmd", "nullcontext(3)", "nullcontext(4)"),            # a `with` block
    ("02-functions.qmd", "remember(5)", "remember(6)"),              # a mutating function
    ("02-functions.qmd", "add(7)", "add(8)"),                        # `global`
    ("02-functions.qmd", "scale = 10", "scale = 100"),               # a generator
    ("03-outside.qmd", '"green"', '"red"'),                          # module state
    ("03-outside.qmd", '"41"', '"50"'),                              # a file
    # one more draw before x: every later number of the chapter changes; undone, they return
    ("03-outside.qmd", "x = random.random()", "_ = random.random()\nx = random.random()"),
]


def build(root: Path, lines, use_cache: bool = True) -> str:
    lines.clear()
    result = build_document(root / "deck.qmd", BuildSettings(html_only=True, use_cache=use_cache),
                            lines)
    return result.html.read_bytes().decode()


def edit(root: Path, chapter: str, old: str, new: str) -> None:
    path = root / "chapters" / chapter
    text = path.read_text()
    assert text.count(old) == 1, (chapter, old)
    path.write_text(text.replace(old, new))


def chapters_run(lines) -> list[str]:
    """The chapters a build ran, from its progress line."""
    line = next((l for l in lines if "running " in l and " chapters: " in l), None)
    return [] if line is None else line.split(" chapters: ", 1)[1].split(", ")


def test_incremental_builds_equal_full_builds_for_every_edit_and_its_undo(deck, lines):
    root = deck("chapters")
    full = build(root, lines, use_cache=False)
    assert "alias [1, 2, 3]" in full and "module state green" in full
    assert build(root, lines) == full and chapters_run(lines) == []     # all cached
    for chapter, old, new in EDITS:
        edit(root, chapter, old, new)
        incremental = build(root, lines)
        assert chapters_run(lines) == [chapter]
        assert incremental != full, f"editing {chapter} changed nothing it prints"
        assert incremental == build(root, lines, use_cache=False), f"{chapter}: stale output"
        edit(root, chapter, new, old)
        assert build(root, lines) == full, f"{chapter}: undoing the edit left stale output"
        assert chapters_run(lines) == []                                   # the old entry


def test_reordering_chapters_runs_nothing(deck, lines):
    root = deck("chapters")
    before = build(root, lines)
    doc = root / "deck.qmd"
    text = doc.read_text()
    first, last = "{{< include chapters/01-names.qmd >}}", "{{< include chapters/03-outside.qmd >}}"
    doc.write_text(text.replace(first, "@@").replace(last, first).replace("@@", last))
    after = build(root, lines)
    assert chapters_run(lines) == [] and any("all cached" in l for l in lines)
    assert after.index("random 0.") < after.index("alias [") and after != before


def test_an_edit_to_the_setup_cells_runs_every_chapter(deck, lines):
    root = deck("chapters")
    build(root, lines)
    doc = root / "deck.qmd"
    doc.write_text(doc.read_text().replace("import statepkg", "import statepkg\nimport math"))
    build(root, lines)
    assert len(chapters_run(lines)) == 4          # the document's own unit and three chapters


def test_a_chapter_cannot_see_another_chapters_names_and_the_error_names_both(deck, lines):
    root = deck("chapters")
    path = root / "chapters" / "01-names.qmd"
    fence = len(path.read_text().splitlines()) + 2          # the new cell's opening fence
    path.write_text(path.read_text() + "\n```{python}\nprint(seen)\n```\n")
    with pytest.raises(DeckError) as info:
        build(root, lines)
    err = info.value
    assert err.file.endswith("01-names.qmd") and err.line == fence
    assert "reads `seen`, which only 02-functions.qmd:4 defines" in err.message


def test_a_chapter_that_draws_before_seeding_is_an_error(deck, lines):
    root = deck("chapters")
    edit(root, "03-outside.qmd", "random.seed(0)\n", "")
    with pytest.raises(DeckError, match=r"03-outside.qmd draws random numbers before seeding them"):
        build(root, lines)


def test_a_chapter_that_seeds_after_importing_torch_itself_is_accepted(deck, lines):
    pytest.importorskip("torch")
    root = deck("chapters")
    edit(root, "03-outside.qmd", "random.seed(0)\n", "random.seed(0)\nimport torch\n"
         "torch.manual_seed(1)\nt = torch.rand(2)\n")
    assert "random 0." in build(root, lines)
    edit(root, "03-outside.qmd", "torch.manual_seed(1)\n", "")
    with pytest.raises(DeckError, match="draws random numbers before seeding them"):
        build(root, lines)


def test_a_chapter_that_rebinds_a_setup_name_is_an_error(deck, lines):
    root = deck("chapters")
    path = root / "chapters" / "02-functions.qmd"
    path.write_text(path.read_text() + "\n```{python}\nrandom = 3\n```\n")
    with pytest.raises(DeckError, match=r"rebinds `random`, which the setup cell at deck.qmd:7"):
        build(root, lines)


@pytest.mark.parametrize("damage", ["truncated", "wrong shape", "other key"])
def test_a_damaged_cache_entry_is_reported_and_its_chapter_run_again(deck, lines, damage):
    root = deck("chapters")
    full = build(root, lines)
    entries = sorted((root / ".cache" / "deckbuild" / "cells").rglob("*.json"))
    entry = next(p for p in entries if json.loads(p.read_text())["unit"] == "03-outside.qmd")
    text = entry.read_text()
    data = json.loads(text)
    if damage == "truncated":
        entry.write_text(text[: len(text) // 2])
    elif damage == "wrong shape":
        data["cells"] = [{"outputs": "not a list"}]
        entry.write_text(json.dumps(data))
    else:
        data["key"] = "0" * 64
        entry.write_text(json.dumps(data))
    assert build(root, lines) == full
    assert chapters_run(lines) == ["03-outside.qmd"]
    assert any("WARNING cache entry" in l and entry.name in l and "03-outside.qmd" in l
               for l in lines)


def test_jobs_must_be_a_whole_number_of_kernels(deck):
    from deck_helpers import run_cli

    root = deck("chapters")
    proc = run_cli("render", str(root / "deck.qmd"), "--jobs", "0", cwd=root)
    assert proc.returncode == 2
    assert "--jobs: expected a whole number of kernels >= 1, got '0'" in proc.stderr


# Two chapters of the project's own deck: the edit the issue found stale (one more random
# draw in the positions chapter, then its undo) and a number in a cell that builds a model.
REAL_EDITS = [
    ("03-inputs.qmd", "x = torch.randn(1, 5, 16)                       # 5 tokens, no positions",
     "x = torch.randn(1, 5, 16)                       # 5 tokens, no positions\n_ = torch.rand(1)"),
    ("a4-layers.qmd", "ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=20)",
     "ffn = tl.PositionwiseFeedForward(d_model=12, d_ff=24)"),
]


def real_deck_copy(tmp_path: Path) -> Path:
    """The project's deck sources in ``tmp_path`` (its package and trained-model cache
    linked, not copied), so edits never touch the repository."""
    import shutil

    from deck_helpers import REPO

    root = tmp_path / "lab"
    root.mkdir()
    for name in ("_quarto.yml", "custom_lab.scss"):
        shutil.copy(REPO / name, root / name)
    for name in ("slides", "assets"):
        shutil.copytree(REPO / name, root / name)
    (root / "code").symlink_to(REPO / "code")
    models = REPO / ".cache" / "transformer_lab"
    models.mkdir(parents=True, exist_ok=True)
    (root / ".cache").mkdir()
    (root / ".cache" / "transformer_lab").symlink_to(models)
    return root


#: The real deck's chapters that test keeps: the two it edits, and two it does not (a main
#: chapter and the appendix's divider), which must not run again. Each chapter runs in a
#: kernel of its own with the deck's setup cells, so four of them build as they do in the
#: whole deck, in a quarter of its time.
REAL_KEPT = ("02-masks-heads.qmd", "03-inputs.qmd", "a0-appendix.qmd", "a4-layers.qmd")


def test_the_real_deck_builds_incrementally_as_in_full_for_two_chapters(tmp_path, lines):
    import re

    root = real_deck_copy(tmp_path)
    deck = root / "slides"
    index = deck / "index.qmd"
    includes = re.findall(r"\{\{< include chapters/(\S+) >\}\}\n", index.read_text())
    assert set(REAL_KEPT) | {c for c, _, _ in REAL_EDITS} <= set(includes), includes
    index.write_text(re.sub(r"\{\{< include chapters/(\S+) >\}\}\n",
                            lambda m: m.group(0) if m.group(1) in REAL_KEPT else "", index.read_text()))

    def html(use_cache=True):
        lines.clear()
        result = build_document(deck / "index.qmd", BuildSettings(html_only=True,
                                                                  use_cache=use_cache), lines)
        return result.html.read_bytes()

    full = html(use_cache=False)
    originals = {}
    for chapter, old, new in REAL_EDITS:          # both edits at once: two full builds in all
        path = deck / "chapters" / chapter
        originals[path] = text = path.read_text()
        assert text.count(old) == 1, (chapter, old)
        path.write_text(text.replace(old, new))
    incremental = html()
    assert sorted(chapters_run(lines)) == sorted(c for c, _, _ in REAL_EDITS)
    assert incremental != full
    assert incremental == html(use_cache=False), "stale output after the edits"
    for path, text in originals.items():
        path.write_text(text)
    assert html() == full, "stale output after undoing the edits"
    assert chapters_run(lines) == []


def test_a_run_alone_chapter_runs_last_with_no_other_kernel(deck, lines):
    root = deck("chapters")
    with open(root / "_quarto.yml", "a") as f:
        f.write("  run-alone: [chapters/02-functions.qmd]\n")
    build(root, lines, use_cache=False)
    events = [l.split(":")[0].strip() for l in lines if "kernel ready" in l or " cells, " in l]
    # every other unit started and finished before the alone one started
    assert events[-2:] == ["02-functions.qmd", "02-functions.qmd"], events
    assert events.count("02-functions.qmd") == 2


def test_a_run_alone_file_that_does_not_exist_is_an_error(deck, lines):
    root = deck("chapters")
    with open(root / "_quarto.yml", "a") as f:
        f.write("  run-alone: [chapters/99-missing.qmd]\n")
    with pytest.raises(DeckError, match=r"file listed under 'deckbuild: run-alone' not found: "
                                         r"chapters/99-missing.qmd"):
        build(root, lines)
