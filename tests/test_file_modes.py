"""Every file written atomically gets the mode a plain ``open(path, "w")`` would give it
under the current umask (issue 23, item 6): 0o644 under umask 022, so that a web server
running as another user can read the deck and the models, and 0o600 under umask 077.
The temporary files of ``tempfile.mkstemp`` are 0o600 and ``os.replace`` keeps that.

The checks compare modes, which mean the same for root as for anyone else.
"""

import os
import stat
from pathlib import Path

import pytest
import torch

import transformer_lab as tl
from deckbuild import files as deck_files
from fault_helpers import SMALL
from transformer_lab.atomic_files import create_beside
from transformer_lab.export import to_onnx
from transformer_lab.teaching import cache


@pytest.fixture(params=[0o022, 0o077], ids=["umask 022", "umask 077"])
def umask(request):
    """Sets the umask for the test; the mode ``open`` gives a new file under it."""
    before = os.umask(request.param)
    try:
        yield 0o666 & ~request.param
    finally:
        os.umask(before)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def modes(folder: Path) -> dict[str, int]:
    return {p.relative_to(folder).as_posix(): mode(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_helper_gives_what_open_gives(tmp_path, umask):
    with open(tmp_path / "plain", "w"):
        pass
    fd, tmp = create_beside(tmp_path / "target.bin")
    os.close(fd)
    assert mode(tmp_path / "plain") == mode(tmp) == umask
    assert Path(tmp).parent == tmp_path and Path(tmp).name.startswith(".target.bin.")


def test_a_checkpoint(tmp_path, umask):
    model = tl.Transformer(tl.TransformerConfig.tiny(11, 11, d_model=8, num_heads=2, d_ff=16, num_layers=1))
    state = dict(step=1, model=model.state_dict(), config=model.config.to_dict(), src_vocab={}, tgt_vocab={})
    path = tl.save_checkpoint(state, tmp_path / "step_00000001.pt")
    assert mode(path) == umask


def test_a_runs_files(tmp_path, umask):
    tl.fit(tl.RunConfig(**SMALL, task="copy", steps=2, eval_interval=1, average_last=2, output_dir=str(tmp_path)))
    found = modes(tmp_path)
    assert {"checkpoints/step_00000002.pt", "checkpoints/averaged.pt", "metrics.jsonl", "summary.json"} <= set(found)
    assert found == dict.fromkeys(found, umask)


def test_an_onnx_export(tmp_path, umask):
    model = tl.Transformer(tl.TransformerConfig.tiny(11, 13, d_model=8, num_heads=2, d_ff=16, num_layers=1))
    to_onnx(model, tmp_path)
    to_onnx(model, tmp_path)  # over existing files too
    assert modes(tmp_path) == {"decoder.onnx": umask, "encoder.onnx": umask}


def test_a_cached_result(tmp_path, umask):
    cache.set_cache_directory(tmp_path)
    try:
        assert torch.equal(cache.cached("modes", lambda: torch.arange(3), inputs={"n": 3}), torch.arange(3))
    finally:
        cache.set_cache_directory(None)
    found = modes(tmp_path)
    assert len(found) == 1 and list(found.values()) == [umask]


def test_deckbuilds_outputs(tmp_path, umask):
    """The build stamp and the other texts (``write_atomic``), and the HTML and PDF that
    pandoc and Chromium write into ``temporary_beside`` before the build moves them."""
    deck_files.write_atomic(tmp_path / "builds" / "deck.json", '{"fingerprint": "abc"}')
    for name, suffix in (("index.html", ".partial.html"), ("index.pdf", ".partial.pdf")):
        tmp = deck_files.temporary_beside(tmp_path / name, suffix)
        tmp.write_bytes(b"written by pandoc or Chromium")  # over the file, as they write it
        os.replace(tmp, tmp_path / name)  # as build.py moves it into place
    assert modes(tmp_path) == {"builds/deck.json": umask, "index.html": umask, "index.pdf": umask}
