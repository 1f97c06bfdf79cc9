"""Checkpoints under damage: flipped bytes, foreign pickles, a full disk, old files.

Every failure is a ``CheckpointError`` (reading) or an ``OSError`` (writing) naming the
file, in one line; nothing half-written is left behind.
"""

import re
import struct
import warnings
import zipfile

import pytest
import torch

import transformer_lab as tl
from fault_helpers import rewrite_checkpoint
from transformer_lab.checkpoint import checkpoint_name


def small_state(step=1):
    torch.manual_seed(step)
    model = tl.Transformer(tl.TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=12, num_heads=3,
                                                d_ff=20, num_layers=1, max_len=64))
    src_vocab = tl.Vocabulary(list("abcdefghijklmnopqrs"), tokenize="char")  # 19 + 4 specials = 23
    tgt_vocab = tl.Vocabulary(list("abcdefghijklmno"), tokenize="char")  # 15 + 4 = 19
    return dict(step=step, model=model.state_dict(), config=model.config.to_dict(), src_vocab=src_vocab.to_dict(),
                tgt_vocab=tgt_vocab.to_dict())


def tensor_data_offset(path) -> tuple[int, int]:
    """(offset, size) in the file of the largest tensor's bytes: the zip member
    ``<archive>/data/<n>`` that torch.save stores uncompressed."""
    with zipfile.ZipFile(path) as z:
        info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
    name_len, extra_len = struct.unpack("<HH", header[26:30])  # the local header's own lengths
    return info.header_offset + 30 + name_len + extra_len, info.file_size


def test_bytes_flipped_inside_tensor_data_are_a_checkpoint_error_naming_the_file(tmp_path):
    path = tl.save_checkpoint(small_state(), tmp_path / checkpoint_name(1))
    offset, size = tensor_data_offset(path)
    data = bytearray(path.read_bytes())
    for i in range(offset + size // 2, offset + size // 2 + 4):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(tl.CheckpointError, match=re.escape(repr(str(path))) + " is corrupt: its contents do not "
                                                 "match the SHA-256 digest"):
        tl.load_checkpoint(path)


def test_the_digest_covers_values_other_than_tensors(tmp_path):
    path = tl.save_checkpoint(small_state(), tmp_path / "ckpt.pt")
    state = torch.load(path, weights_only=True)
    state["step"] = 2  # as if a byte of the pickle changed a number: the digest no longer matches
    torch.save(state, path)
    with pytest.raises(tl.CheckpointError, match="do not match the SHA-256 digest"):
        tl.load_checkpoint(path)


def test_a_checkpoint_from_before_the_digest_loads_with_a_warning(tmp_path):
    path = tl.save_checkpoint(small_state(), tmp_path / "old.pt")
    state = torch.load(path, weights_only=True)
    del state["sha256"]
    state["format"] = "transformer_lab.checkpoint/1"
    torch.save(state, path)
    with pytest.warns(UserWarning, match="written before checkpoints carried a digest .* cannot be verified"):
        loaded = tl.load_checkpoint(path)
    assert loaded["step"] == 1 and torch.equal(loaded["model"]["tgt_embed.embedding.weight"],
                                               small_state()["model"]["tgt_embed.embedding.weight"])


class Payload:
    """A class a crafted pickle asks to import: weights_only loading must refuse it."""

    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_rejected_pickle_says_it_is_not_our_checkpoint_without_torchs_advice(tmp_path, capsys):
    path = tmp_path / "crafted.pt"
    torch.save({"format": "transformer_lab.checkpoint/2", "model": Payload()}, path)
    with pytest.raises(tl.CheckpointError) as caught:
        tl.load_checkpoint(path)
    message = str(caught.value)
    assert message.startswith(f"{str(path)!r} is not a checkpoint this package wrote")
    assert "weights_only" not in message and "\x1b" not in message and "\n" not in message
    assert "this must never run" not in capsys.readouterr().out


@pytest.mark.parametrize("failure", [
    RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 1024 vs 960"),  # torch, disk full
    OSError(28, "No space left on device"),
])
def test_a_full_disk_is_an_os_error_naming_the_file_and_keeps_the_previous_one(tmp_path, monkeypatch, failure):
    path = tl.save_checkpoint(small_state(1), tmp_path / "ckpt.pt")
    before = path.read_bytes()

    def full(*args, **kwargs):
        raise failure

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OSError, match=re.escape(f"cannot write checkpoint {str(path)!r} (is the disk full")):
        tl.save_checkpoint(small_state(2), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temporary left


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["config"].update(d_model=-3), "has an invalid model config: ValueError: d_model must be"),
    (lambda s: s["config"].update(bogus=1), "has an invalid model config: TypeError: "),
    (lambda s: s.update(src_vocab={"x": 1}), "has an invalid src_vocab: ValueError: state must be a dict"),
    (lambda s: s.update(tgt_vocab=tl.Vocabulary(["a"]).to_dict()), "has a tgt_vocab of 5 symbols for a model"),
    (lambda s: s["model"].update({"X" + k: s["model"].pop(k) for k in list(s["model"])[:1]}),
     "holds weights that do not fit its model config: RuntimeError: Error"),
])
def test_a_loadable_checkpoint_that_makes_no_model_is_a_checkpoint_error(tmp_path, edit, message):
    path = rewrite_checkpoint(tl.save_checkpoint(small_state(), tmp_path / "ckpt.pt"), edit)
    with pytest.raises(tl.CheckpointError, match=re.escape(f"checkpoint {str(path)!r} ") + re.escape(message)):
        tl.load_model(path)


def test_a_corrupt_member_name_in_the_archive_is_one_short_line(tmp_path):
    path = tl.save_checkpoint(small_state(), tmp_path / "ckpt.pt")
    path.write_bytes(path.read_bytes().replace(b"data.pkl", b"dXta.pkl"))  # the pickle's name, everywhere
    with pytest.raises(tl.CheckpointError) as caught:
        tl.load_checkpoint(path)
    assert str(caught.value) == (f"checkpoint {str(path)!r} is corrupt or unreadable: RuntimeError: "
                                 f"PytorchStreamReader failed locating file data.pkl: file not found")


def test_error_messages_are_one_line_without_escape_codes(tmp_path):
    path = tmp_path / "ckpt.pt"
    tl.save_checkpoint(small_state(), path)
    rewrite_checkpoint(path, lambda s: s["model"].update({"Xa": s["model"].pop(k) for k in list(s["model"])[:1]}))
    with warnings.catch_warnings(), pytest.raises(tl.CheckpointError) as caught:
        tl.load_model(path)
    assert "\n" not in str(caught.value) and "\t" not in str(caught.value)
