"""Partial runs (code/deckbuild/execute.py, partial.py): after a one-cell edit only that
cell, its dependents and the cells that rebuild their state run, and the result equals a
full ordered run's, random numbers included."""

import re
from pathlib import Path

from deckbuild.execute import KernelSettings, execute
from deckbuild.markdown import write_markdown
from deckbuild.options import load_project, resolve_options
from deckbuild.source import parse

CELL_LINE = re.compile(r"cell (\d+)/\d+ .*?(?:\((.*)\))? \.\.\.")


def render(root: Path, lines, use_cache: bool = True) -> tuple[str, dict]:
    """Execute the deck and write its markdown: (markdown, {cell number: why it ran})."""
    path = root / "deck.qmd"
    doc = parse(path, root)
    opts = resolve_options(load_project(root), path, doc.front)
    lines.clear()
    outputs, stats = execute(doc, opts, root / ".cache" / "cells", use_cache, lines,
                             KernelSettings())
    ran = {int(m[1]): m[2] or "" for l in lines if (m := CELL_LINE.search(l))}
    assert sorted(ran) == [i + 1 for i in stats["ran"]]
    md = write_markdown(doc, outputs, opts, root / ".cache" / "work", [])
    return md.read_text(), ran


def edit(root: Path, old: str, new: str) -> None:
    path = root / "deck.qmd"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def reference(root: Path, lines) -> str:
    """The markdown of a full ordered run with no cache (the reference)."""
    return render(root, lines, use_cache=False)[0]


def test_a_one_cell_edit_runs_that_cell_its_dependents_and_their_state(deck, lines):
    root = deck("partial")
    render(root, lines)
    md, ran = render(root, lines)
    assert ran == {}                                   # all cached: no kernel at all
    edit(root, "b = 10", "b = 11")
    md, ran = render(root, lines)
    # cell 3 changed, 5 reads b; 1 (setup), 2 and 4 build the list 5 sums
    assert ran == {1: "state for cell 5", 2: "state for cell 5", 3: "changed",
                   4: "state for cell 5", 5: "depends on cell 3"}
    assert "sum 10 11" in md
    assert md == reference(root, lines)


def test_a_mutation_through_a_method_call_reruns_the_readers(deck, lines):
    root = deck("partial")
    render(root, lines)
    edit(root, "a.append(4)", "a.append(40)")
    md, ran = render(root, lines)
    assert ran[4] == "changed" and ran[5] == "depends on cell 4" and 6 not in ran
    assert "sum 46 10" in md and md == reference(root, lines)


def test_a_barrier_cell_forces_every_later_cell(deck, lines):
    root = deck("partial")
    edit(root, "c = 5\n", "import os\nos.environ['DECK_X'] = '1'\nc = 5\n")
    (root / "deck.qmd").write_text((root / "deck.qmd").read_text()
                                   + "\n## After\n\n```{python}\nprint('after', 1)\n```\n")
    render(root, lines)
    edit(root, "os.environ['DECK_X'] = '1'", "os.environ['DECK_X'] = '2'")
    md, ran = render(root, lines)
    assert ran[8] == "changed" and ran[9] == "depends on cell 8"
    assert not {2, 3, 4, 5, 6, 7} & set(ran)


def test_an_unseeded_random_cell_draws_the_same_numbers_alone_as_in_order(deck, lines):
    root = deck("partial")
    full, _ = render(root, lines)
    edit(root, 'print("draw", r)', 'print("draw", r, "again")')
    md, ran = render(root, lines)
    # only the random cell runs: from the generator state cells 1-5 left in a full run
    assert ran == {1: "state for cell 6", 6: "changed"}
    draw = re.search(r"draw (\S+) again", md)[1]
    assert f"draw {draw}\n" in full
    assert md == reference(root, lines)


def test_a_changed_number_of_draws_reruns_the_later_random_cells(deck, lines):
    root = deck("partial")
    render(root, lines)
    edit(root, "r = random.random()", "r = random.random()\nrandom.random()")
    md, ran = render(root, lines)
    assert ran[6] == "changed"
    assert ran[7].startswith("random state changed before cell 7")
    assert any("starts from another random state" in l for l in lines)
    assert md == reference(root, lines)


def test_partial_builds_equal_full_builds_for_several_edits(deck, lines):
    root = deck("partial")
    render(root, lines)
    for old, new in [("a = [1, 2, 3]", "a = [1, 2]"), ('print("b", b)', 'print("b is", b)'),
                     ("np.random.rand()", "np.random.rand() * 2"), ("c = 5", "c = 6"),
                     ("np.random.seed(0)", "np.random.seed(1)")]:
        edit(root, old, new)
        md, ran = render(root, lines)
        assert len(ran) < 8 or old.startswith("np.random.seed"), "\n".join(lines)
        assert md == reference(root, lines), old
        render(root, lines)    # the reference build refreshed nothing the next edit needs


HIDDEN_STATE = '''## Hidden state

```{python}
import os
flag = "drawn.flag"
if not os.path.exists(flag):   # draws only the first time, like a cache miss
    random.random()
    open(flag, "w").close()
print("flag", flag)
```

```{python}
print("reads", flag)
```

## Random
'''


def test_a_cell_that_draws_less_when_run_again_is_recorded_so_the_fallback_does_not_repeat(
        deck, lines):
    """A cell whose draws depend on something outside the kernel (a file, like a cache
    miss and a hit) draws nothing when re-run for state; the run falls back once, and the
    cell's new random-state record keeps the next, unrelated edit partial."""
    root = deck("partial")
    edit(root, "## Random\n", HIDDEN_STATE)
    render(root, lines)                                     # full run: the cell draws
    edit(root, 'print("reads", flag)', 'print("reads again", flag)')
    render(root, lines)                                     # re-run for state: no draw
    assert any("now starts from another random state" in l for l in lines)
    edit(root, "b = 10", "b = 11")
    md, ran = render(root, lines)
    assert not any("now starts from another random state" in l for l in lines)
    assert "random" not in " ".join(ran.values())
