"""The preview's watcher (code/deckbuild/preview.py, watch.py): a file saved while a
rebuild runs is rebuilt afterwards, not missed (an author saving twice in quick
succession); it learns of changes from the operating system, for the files a build reads
only (never `.venv`, `node_modules`, `_output` or `.cache`)."""

import os
import time
from pathlib import Path

import pytest

from deckbuild import preview, watch
from deckbuild.options import load_project


class Done(Exception):
    pass


def _saved(watcher: watch.Watcher, timeout: float = 10) -> set[Path]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        paths = watcher.wait(timeout=0.2)
        if paths:
            return paths
    return set()


def test_a_save_during_a_rebuild_triggers_another_rebuild(tmp_path):
    deck = tmp_path / "deck.qmd"
    deck.write_text("## A\n")
    sources = watch.Sources(frozenset({deck.resolve()}))
    watcher = watch.Watcher()
    watcher.aim(sources)
    calls = []

    def rebuild():
        calls.append(deck.read_text())
        if len(calls) == 1:     # saved again while this build runs
            deck.write_text("## B\n")
            time.sleep(0.5)
            return True
        raise Done

    try:
        deck.write_text("## A, edited\n")          # the author's save
        with pytest.raises(Done):
            preview.watch(watcher, lambda: sources, rebuild, lambda *a, **k: None, tmp_path)
    finally:
        watcher.close()
    assert calls == ["## A, edited\n", "## B\n"]


def test_the_sources_are_the_files_the_build_reads(deck):
    """A project's deck: the document, its include, the config, the theme, the image and
    the cache-sources folder; the folders beside them are not watched."""
    root = deck("features").resolve()
    (root / "lib").mkdir()
    (root / "_quarto.yml").write_text((root / "_quarto.yml").read_text()
                                      + "deckbuild:\n  cache-sources: [lib]\n")
    found = watch.sources_of(root / "deck.qmd", load_project(root))
    existing = {f.relative_to(root).as_posix() for f in found.files if f.exists()}
    assert existing == {"deck.qmd", "_quarto.yml", "theme.scss", "parts/one.qmd", "parts/two.qmd",
                        *(f.relative_to(root).as_posix() for f in (root / "img").iterdir())}
    assert found.trees == {root / "lib"} and found.folders == {root, root / "parts", root / "img"}
    assert found.relevant(root / "lib" / "pkg" / "mod.py")
    assert not found.relevant(root / "lib" / "__pycache__" / "mod.cpython-312.pyc")
    for other in (".venv/lib/x.py", "node_modules/a/b.js", "_output/deck.html", ".cache/x",
                  "notes.md", "parts/new.qmd"):
        assert not found.relevant(root / other), other
    # after a failed build a new file of a source kind in a watched folder counts too
    assert found.relevant(root / "parts" / "new.qmd", loose=True)
    assert not found.relevant(root / ".venv" / "new.qmd", loose=True)


def test_only_the_sources_folders_are_watched(tmp_path):
    """A change inside .venv, node_modules, _output or .cache is never reported, nor is a
    new folder's content; a change to a source, saved in place or by rename, is."""
    doc = tmp_path / "deck.qmd"
    doc.write_text("## A\n")
    for name in (".venv", "node_modules", "_output", ".cache"):
        (tmp_path / name).mkdir()
    watcher = watch.Watcher()
    watcher.aim(watch.Sources(frozenset({doc.resolve()})))
    try:
        for name in (".venv", "node_modules", "_output", ".cache"):
            (tmp_path / name / "file.py").write_text("x = 1\n")
        assert _saved(watcher, timeout=1.0) == set()
        doc.write_text("## B\n")
        assert doc.resolve() in _saved(watcher)
        staged = tmp_path / ".deck.qmd.tmp"
        staged.write_text("## C\n")
        os.replace(staged, doc)                    # an editor's save by rename
        assert doc.resolve() in _saved(watcher)
    finally:
        watcher.close()


def test_an_edit_to_the_project_options_is_built(deck, preview):
    """_quarto.yml is read again on each rebuild; before, the preview kept the options it
    had started with and an edit to them rebuilt the deck unchanged."""
    root = deck("preview")
    p = preview(root / "deck.qmd")
    p.wait(lambda: p.get("/deck.html")[0] == 200, "the first build")
    assert b"Project footer" not in p.get("/deck.html")[1]
    config = root / "_quarto.yml"
    config.write_text(config.read_text() + '    footer: "Project footer"\n')
    p.wait(lambda: b"Project footer" in p.get("/deck.html")[1], "the footer from _quarto.yml")


def test_a_folder_removed_and_created_again_is_watched_again(tmp_path):
    """An included file's folder is deleted (the build fails) and, after that build, made
    again with the file: the preview rebuilds, and watches the new folder (an inotify
    watch dies with its folder)."""
    import shutil
    import threading

    deck, part = tmp_path / "deck.qmd", tmp_path / "parts" / "one.qmd"
    part.parent.mkdir()
    deck.write_text("{{< include parts/one.qmd >}}\n")
    part.write_text("a")
    sources = watch.Sources(frozenset({deck.resolve(), part.resolve()}))
    watcher = watch.Watcher()
    watcher.aim(sources)
    calls, done = [], threading.Event()

    def put_back():
        part.parent.mkdir()
        part.write_text("b")

    def rebuild():
        calls.append(part.read_text() if part.exists() else None)
        if len(calls) == 1:         # the author puts the folder back after this build failed
            threading.Timer(0.5, put_back).start()
            return False
        if len(calls) == 2:
            time.sleep(0.3)
            part.write_text("c")    # seen only through a new watcher of the new folder
            return True
        done.set()
        raise Done

    def run():
        with pytest.raises(Done):
            preview.watch(watcher, lambda: sources, rebuild, lambda *a, **k: None, tmp_path)

    shutil.rmtree(part.parent)
    threading.Thread(target=run, daemon=True).start()
    try:
        done.wait(10)
    finally:
        watcher.close()
    assert calls == [None, "b", "c"]
