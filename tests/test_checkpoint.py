"""Checkpoints: atomic round trip, clear errors, averaging (Section 6.1)."""

import os

import pytest
import torch

import transformer_lab as tl
from transformer_lab.checkpoint import (
    AVERAGED_NAME,
    checkpoint_name,
    prune_checkpoints,
    resolve_checkpoint,
)


def small_model(seed):
    torch.manual_seed(seed)
    return tl.Transformer(tl.TransformerConfig(src_vocab_size=23, tgt_vocab_size=19, d_model=12, num_heads=3,
                                               d_ff=20, num_layers=1, max_len=64))


def state_of(model, step):
    vocab = tl.Vocabulary(["a", "b"], tokenize="char")
    return dict(step=step, model=model.state_dict(), config=model.config.to_dict(),
                src_vocab=vocab.to_dict(), tgt_vocab=vocab.to_dict())


def test_round_trip_restores_every_tensor(tmp_path):
    model = small_model(0)
    path = tl.save_checkpoint(state_of(model, 7), tmp_path / checkpoint_name(7))
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000007.pt"]  # no temporary file left
    state = tl.load_checkpoint(path)
    assert state["step"] == 7 and state["config"] == model.config.to_dict()
    twin = tl.Transformer(tl.TransformerConfig(**state["config"]))
    twin.load_state_dict(state["model"])
    for (name, a), (_, b) in zip(model.state_dict().items(), twin.state_dict().items()):
        assert torch.equal(a, b), name


def test_directories_resolve_to_the_latest_step(tmp_path):
    model = small_model(0)
    for step in (10, 2, 30):
        tl.save_checkpoint(state_of(model, step), tmp_path / "checkpoints" / checkpoint_name(step))
    assert resolve_checkpoint(tmp_path).name == "step_00000030.pt"
    assert [p.name for p in tl.list_checkpoints(tmp_path / "checkpoints")] == [
        "step_00000002.pt", "step_00000010.pt", "step_00000030.pt"]
    prune_checkpoints(tmp_path / "checkpoints", keep=2)
    assert [p.name for p in tl.list_checkpoints(tmp_path / "checkpoints")] == ["step_00000010.pt",
                                                                               "step_00000030.pt"]


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(tl.CheckpointError, match="does not exist"):
        tl.load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(tl.CheckpointError, match="no checkpoint"):
        tl.load_checkpoint(tmp_path)


def test_corrupt_checkpoint_is_a_clear_error_and_is_left_alone(tmp_path):
    path = tl.save_checkpoint(state_of(small_model(0), 1), tmp_path / checkpoint_name(1))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated, as by a crash without os.replace
    with pytest.raises(tl.CheckpointError, match="corrupt or unreadable"):
        tl.load_checkpoint(path)
    assert path.read_bytes() == data[: len(data) // 2]
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(tl.CheckpointError, match="not a transformer_lab checkpoint"):
        tl.load_checkpoint(other)


def test_a_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tl.save_checkpoint(state_of(small_model(0), 1), tmp_path / "ckpt.pt")
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(OSError, match="disk full"):
        tl.save_checkpoint(state_of(small_model(1), 2), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.pt"]


def test_average_of_two_checkpoints_is_the_mean_of_their_parameters(tmp_path):
    a, b = small_model(0), small_model(1)
    paths = [tl.save_checkpoint(state_of(m, s), tmp_path / checkpoint_name(s)) for m, s in ((a, 1), (b, 2))]
    averaged = tl.average_checkpoints(paths)
    assert averaged["averaged_steps"] == [1, 2] and averaged["step"] == 2
    for name, value in averaged["model"].items():
        torch.testing.assert_close(value, (a.state_dict()[name] + b.state_dict()[name]) / 2)
    tl.save_checkpoint(averaged, tmp_path / AVERAGED_NAME)
    assert resolve_checkpoint(tmp_path, prefer_averaged=True).name == AVERAGED_NAME
    assert resolve_checkpoint(tmp_path).name == "step_00000002.pt"


def test_averaging_rejects_mismatched_state_dicts():
    with pytest.raises(ValueError, match="at least one"):
        tl.average_state_dicts([])
    with pytest.raises(ValueError, match="different keys"):
        tl.average_state_dicts([{"w": torch.zeros(2)}, {"v": torch.zeros(2)}])
