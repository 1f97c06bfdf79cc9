"""The cells' dependency graph (code/deckbuild/depgraph.py): which earlier cells a cell's
cache key and partial run depend on, read statically from the names they share."""

import pytest

from deckbuild.depgraph import analyze, build_graph


def deps(*codes, setup=frozenset()):
    return [sorted(d) for d in build_graph(list(codes), set(setup)).deps]


def test_a_read_links_to_the_cell_that_bound_the_name_and_nothing_else():
    assert deps("x = 1", "y = 2", "print(x)") == [[], [], [0]]


def test_a_mutation_through_a_method_call_or_an_item_links_later_readers():
    # cell 1 changes the list in place: cell 2 must depend on it, not only on cell 0
    assert deps("a = [1]", "a.append(2)", "print(a)") == [[], [0], [0, 1]]
    assert deps("d = {}", "d['k'] = 1", "print(d)")[2] == [0, 1]


def test_a_plain_rebinding_cuts_the_chain():
    # cell 2 binds fig anew before using it: it does not depend on cells 0 and 1
    assert deps("fig = 1", "fig.x = 2", "fig = 3\nprint(fig)") == [[], [0], []]
    # an augmented assignment reads the old value first
    assert deps("n = 1", "n += 1") == [[], [0]]


def test_names_bound_only_by_imports_do_not_link_cells_but_are_recorded():
    g = build_graph(["import torch\nx = 1", "y = torch.zeros(2)", "print(torch.ones(1))"])
    assert [sorted(d) for d in g.deps] == [[], [], []]
    assert g.imports[2] == ["import torch"]
    # a name that is also assigned somewhere is data, and links
    assert deps("import numpy as np", "np = 3", "print(np)")[2] == [1]


def test_comprehension_variables_are_local_but_a_walrus_binds_outside():
    assert deps("i = 0", "xs = [i * 2 for i in range(3)]") == [[], []]
    assert deps("i = 0", "xs = [j for j in range(i)]")[1] == [0]
    n = analyze("ys = [(last := v) for v in range(3)]")
    assert "last" in n.writes and "v" not in n.reads | n.writes


def test_a_function_reads_the_globals_its_body_names_when_called():
    # f reads k when cell 3 calls it, so cell 3 depends on the cell that changed k
    assert deps("k = 1", "def f():\n    return k", "k = 2", "print(f())")[3] == [1, 2]
    assert "x" not in analyze("def g(x):\n    return x + 1").reads


@pytest.mark.parametrize("code", [
    "import os\nos.environ['A'] = '1'", "import sys\nsys.path.insert(0, '.')",
    "import torch\ntorch.set_num_threads(1)", "import numpy as np\nnp.set_printoptions(3)",
    "import warnings\nwarnings.filterwarnings('ignore')",
    "import matplotlib.pyplot as plt\nplt.rcParams['font.size'] = 20",
    "import torch\ntorch.use_deterministic_algorithms(True)",
])
def test_a_cell_that_changes_process_wide_state_is_a_barrier(code):
    # every later cell depends on it, though they share no name
    assert deps("x = 1", code, "print(2)", "print(3)")[2:] == [[1], [1]]


@pytest.mark.parametrize("code", [
    "global z\nz = 1", "exec('w = 1')", "eval('1')", "from os import *", "%timeit 1",
    "!ls", "print(_)", "x = (",
])
def test_a_cell_the_analysis_cannot_see_through_depends_on_everything(code):
    assert deps("x = 1", "y = 2", code, "print(3)")[2:] == [[0, 1], [2]]
    assert build_graph([code]).names[0].opaque


def test_the_setup_cell_and_module_setters_are_barriers():
    assert deps("x = 1", "print(2)", setup={0})[1] == [0]
    assert deps("import mylib\nmylib.set_cache_directory('.')", "print(1)")[1] == [0]


def test_ancestors_are_the_transitive_closure():
    g = build_graph(["a = 1", "b = a + 1", "c = b + 1", "d = 4"])
    assert [sorted(a) for a in g.ancestors] == [[], [0], [0, 1], []]


def test_a_for_or_with_target_is_bound_before_the_body_reads_it():
    # the loop's `out` is its own; the earlier cell's `out` is not read
    assert deps("out = 1", "for out in [2, 3]:\n    print(out)") == [[], []]
    assert deps("f = 1", "with open('x') as f:\n    print(f)") == [[], []]
    # ...but the iterable is read first, and a loop's else sees the old value
    assert deps("out = [1]", "for out in out:\n    print(out)")[1] == [0]
    assert deps("out = 1", "for out in []:\n    pass\nelse:\n    print(out)")[1] == [0]
    # a later cell still sees either value: it depends on both
    assert deps("out = 1", "for out in []:\n    pass", "print(out)")[2] == [0, 1]
    # a with body runs once: its plain assignments rebind
    assert deps("r = 1", "with open('x') as f:\n    r = f.read()") == [[], []]


def test_match_patterns_bind_names():
    n = analyze("match p:\n    case [a, *rest]:\n        pass\n    case {'k': v, **more}:\n        pass")
    assert {"a", "rest", "v", "more"} <= n.writes
    assert deps("a = 1", "match 2:\n    case a:\n        pass", "print(a)")[2] == [0, 1]
