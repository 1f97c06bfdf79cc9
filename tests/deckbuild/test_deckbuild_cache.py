"""The execution cache: what invalidates a cell, and that a warm build starts no kernel."""

from pathlib import Path

from deckbuild.build import BuildSettings, build_document
from deckbuild.cells import effective_cell_options
from deckbuild.options import REVEALJS_DEFAULTS, load_project
from deckbuild.source import parse
from deckbuild.units import setup_cells, source_hash, unit_key, units_of


def keys_for(tmp_path: Path, chapters: list[str], setup: str = "x = 1",
             context: str = "p") -> list[str]:
    """The unit keys of a document with one setup cell and one chapter per text."""
    includes = []
    for i, code in enumerate(chapters):
        (tmp_path / f"c{i}.qmd").write_text(f"## C{i}\n\n```{{python}}\n{code}\n```\n")
        includes.append(f"{{{{< include c{i}.qmd >}}}}")
    path = tmp_path / "d.qmd"
    path.write_text(f"```{{python}}\n{setup}\n```\n\n" + "\n\n".join(includes) + "\n")
    doc = parse(path, tmp_path)
    effs = [effective_cell_options(c, dict(REVEALJS_DEFAULTS)) for c in doc.cells]
    return [unit_key(u, setup_cells(doc), effs, {"sources": context}) for u in units_of(doc)]


def test_changing_a_chapter_changes_its_key_only(tmp_path):
    a = keys_for(tmp_path, ["y = 2", "z = 3", "print(y)"])
    b = keys_for(tmp_path, ["y = 20", "z = 3", "print(y)"])
    assert a[0] == b[0] and a[1] != b[1] and a[2:] == b[2:]


def test_the_setup_cells_are_part_of_every_chapters_key(tmp_path):
    a = keys_for(tmp_path, ["y = 2", "z = 3"])
    b = keys_for(tmp_path, ["y = 2", "z = 3"], setup="x = 2")
    assert all(x != y for x, y in zip(a, b))


def test_a_chapters_key_does_not_depend_on_its_place(tmp_path):
    a = keys_for(tmp_path, ["y = 2", "z = 3"])
    b = keys_for(tmp_path, ["z = 3", "y = 2"])
    assert a[1:] == b[1:][::-1]


def test_options_and_package_source_are_part_of_the_key(tmp_path):
    a = keys_for(tmp_path, ["y = 1"])
    assert keys_for(tmp_path, ["#| echo: true\ny = 1"])[1] != a[1]
    assert keys_for(tmp_path, ["y = 1"], context="other")[1] != a[1]
    assert keys_for(tmp_path, ["y = 1"]) == a


def test_source_hash_covers_the_source_and_data_files_of_the_cache_sources(deck):
    root = deck("cache")
    folders = load_project(root).cache_sources
    assert folders == [(root / "code" / "labpkg").resolve()]
    pkg = root / "code" / "labpkg"
    before = source_hash(folders)
    for ignored in ("__pycache__/m.cpython-311.pyc", ".m.py.swp", "m.py~"):
        (pkg / ignored).parent.mkdir(exist_ok=True)
        (pkg / ignored).write_text("bytecode, an editor's swap file, a backup")
    assert source_hash(folders) == before
    (root / "code" / "other.py").write_text("outside the listed folders")
    assert source_hash(folders) == before
    (pkg / "widget.js").write_text("// a script a cell embeds in its HTML output\n")
    with_data = source_hash(folders)
    assert with_data != before
    (pkg / "__init__.py").write_text("VALUE = 2\n")
    assert source_hash(folders) not in (before, with_data)


def _pids(html: Path) -> tuple[str, str]:
    text = html.read_text()
    first = text.split("first ", 1)[1].split("\n", 1)[0]
    second = text.split("second ", 1)[1].split("\n", 1)[0]
    return first, second


def test_warm_build_reuses_outputs_and_package_change_reexecutes(deck, lines):
    root = deck("cache")
    settings = BuildSettings(html_only=True)
    r1 = build_document(root / "deck.qmd", settings, lines)
    assert any("kernel ready" in l for l in lines)
    first = _pids(r1.html)
    lines.clear()
    r2 = build_document(root / "deck.qmd", settings, lines)
    assert not any("kernel ready" in l for l in lines) and r2.up_to_date
    assert _pids(r2.html) == first
    # a change to the package re-executes the cells (new kernel, new pid)
    (root / "code" / "labpkg" / "__init__.py").write_text("VALUE = 7\n")
    lines.clear()
    r3 = build_document(root / "deck.qmd", settings, lines)
    assert any("kernel ready" in l for l in lines)
    assert "first 7 " in r3.html.read_text() and _pids(r3.html) != first


def test_changed_cell_and_no_cache(deck, lines):
    root = deck("cache")
    settings = BuildSettings(html_only=True)
    build_document(root / "deck.qmd", settings, lines)
    text = (root / "deck.qmd").read_text().replace('print("second"', 'print("second", "changed"')
    (root / "deck.qmd").write_text(text)
    lines.clear()
    r = build_document(root / "deck.qmd", settings, lines)
    assert any("kernel ready" in l for l in lines) and "second changed" in r.html.read_text()
    lines.clear()
    build_document(root / "deck.qmd", BuildSettings(html_only=True, use_cache=False), lines)
    assert any("kernel ready" in l for l in lines)


def test_an_environment_variable_named_in_cache_env_reruns_the_cells_and_others_do_not(deck, lines, monkeypatch):
    """`deckbuild: cache-env`: a setting that changes what cells compute without changing
    their code (ATEN_CPU_CAPABILITY trains another model) keys the cache; undo gives the
    first build's outputs back."""
    root = deck("cache")
    config = root / "_quarto.yml"
    config.write_text(config.read_text().replace("  cache-sources: [code/labpkg]\n",
                                                 "  cache-sources: [code/labpkg]\n  cache-env: [LAB_KERNELS]\n"))
    assert load_project(root).cache_env == ["LAB_KERNELS"]
    settings = BuildSettings(html_only=True)
    monkeypatch.setenv("LAB_KERNELS", "native")
    first = _pids(build_document(root / "deck.qmd", settings, lines).html)
    monkeypatch.setenv("UNLISTED", "anything")          # not in cache-env: still a cache hit
    lines.clear()
    assert build_document(root / "deck.qmd", settings, lines).up_to_date
    monkeypatch.setenv("LAB_KERNELS", "default")        # listed: the cells run again
    lines.clear()
    other = build_document(root / "deck.qmd", settings, lines)
    assert any("kernel ready" in l for l in lines) and _pids(other.html) != first
    monkeypatch.setenv("LAB_KERNELS", "native")         # undone: the first build's outputs
    lines.clear()
    again = build_document(root / "deck.qmd", settings, lines)
    assert not any("kernel ready" in l for l in lines) and _pids(again.html) == first
