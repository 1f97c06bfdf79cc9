"""The preview's watcher (code/deckbuild/preview.py): a file saved while a rebuild runs
is rebuilt afterwards, not missed (an author saving twice in quick succession)."""

import os

import pytest

from deckbuild import preview


class Done(Exception):
    pass


def test_a_save_during_a_rebuild_triggers_another_rebuild(tmp_path, monkeypatch):
    deck = tmp_path / "deck.qmd"
    deck.write_text("## A\n")
    os.utime(deck, (1e9, 1e9))
    calls, polls = [], []

    def save(text, mtime):
        deck.write_text(text)
        os.utime(deck, (mtime, mtime))

    def poll(seconds):          # the watcher's sleep: the first poll sees the author's save
        polls.append(seconds)
        if len(polls) == 1:
            save("## A, edited\n", 1e9 + 1)
        if len(polls) > 10:
            raise AssertionError(f"no rebuild after the second save; rebuilt {calls}")

    def rebuild():
        calls.append(deck.read_text())
        if len(calls) == 1:     # saved again while this build runs
            save("## B\n", 1e9 + 2)
        else:
            raise Done

    monkeypatch.setattr(preview.time, "sleep", poll)
    with pytest.raises(Done):
        preview._watch(tmp_path, rebuild, lambda *a, **k: None)
    assert calls == ["## A, edited\n", "## B\n"]
