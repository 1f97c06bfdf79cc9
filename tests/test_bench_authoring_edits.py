"""The authoring benchmark edits lines of the project's deck: each must still be there, once,
as the kind of line its edit expects (a chapter reshuffle once left one pointing at nothing)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_authoring", ROOT / "benchmarks" / "bench_authoring.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


@pytest.mark.parametrize("label, path, line, kind, typical", bench.REAL_EDITS, ids=[e[0] for e in bench.REAL_EDITS])
def test_every_real_edit_names_a_line_of_the_deck(label, path, line, kind, typical):
    text = (ROOT / path).read_text()
    assert text.count(line) == 1, f"{path} holds {text.count(line)} copies of {line!r}"
    if kind == "cell":  # the edit appends a statement after it: it must be a whole one
        compile(line, path, "exec")
