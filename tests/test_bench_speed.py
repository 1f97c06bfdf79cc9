"""benchmarks/bench_speed.py compares like with like: ours and PyTorch's modules draw the
same dropout masks (same shapes, same rates) in one forward pass, and the JSON the deck's
speed slide reads records the dropout, the device, the threads, the rounds and the sizes.
(Its timings are benchmarks, never asserted here: the machine is shared.)"""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_speed.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_speed", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def small_seq2seq(bench, monkeypatch):
    """The encoder-decoder row at a size that runs in milliseconds."""
    for key, value in dict(batch=2, length=6, vocab=40, d_model=12, heads=3, d_ff=20, layers=2).items():
        monkeypatch.setitem(bench.SEQ2SEQ, key, value)


class DropoutMasks(TorchDispatchMode):
    """Records every random dropout mask drawn while active: (shape, keep probability)."""

    def __init__(self):
        super().__init__()
        self.masks = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.name().startswith(("aten::bernoulli", "aten::native_dropout")):
            rate = args[1] if len(args) > 1 else kwargs.get("p")
            self.masks[(tuple(args[0].shape), round(float(rate), 6))] += 1
        return func(*args, **kwargs)


def masks_of(forward) -> collections.Counter:
    with DropoutMasks() as record:
        forward()
    return record.masks


def pairs(bench):
    """(name, build(dropout) -> (ours, theirs), forward(module)) for each compared pair."""
    x = torch.randn(2, 5, 12)
    src, tgt = torch.randint(4, 40, (2, 6)), torch.randint(4, 40, (2, 5))
    cpu = torch.device("cpu")
    return [
        ("attention", lambda p: bench.build_mha(12, 3, p, cpu),
         lambda m: m(x, x, x) if isinstance(m, bench.tl.MultiHeadAttention) else m(x, x, x, need_weights=False)),
        ("encoder layer", lambda p: bench.build_encoder_layer(12, 3, 20, p, cpu), lambda m: m(x)),
        ("encoder-decoder", lambda p: bench.build_seq2seq(p, cpu), lambda m: m(src, tgt)),
    ]


@pytest.mark.parametrize("dropout", [0.1, 0.3])
def test_both_sides_draw_the_same_dropout_masks(bench, small_seq2seq, dropout):
    """Same places (the masks' shapes: attention weights, feed-forward activations, sub-layer
    outputs, embeddings), same rate, same number: ours does the work PyTorch's does."""
    for name, build, forward in pairs(bench):
        ours, theirs = build(dropout)
        assert ours.training and theirs.training
        drawn_ours, drawn_theirs = masks_of(lambda: forward(ours)), masks_of(lambda: forward(theirs))
        assert drawn_ours, f"{name}: no dropout mask drawn at dropout={dropout}"
        assert drawn_ours == drawn_theirs, f"{name}: ours drew {drawn_ours}, PyTorch's drew {drawn_theirs}"
        assert {rate for _, rate in drawn_ours} == {round(1 - dropout, 6)}


def test_dropout_zero_draws_no_mask_on_either_side(bench, small_seq2seq):
    for name, build, forward in pairs(bench):
        ours, theirs = build(0.0)
        assert not masks_of(lambda: forward(ours)) and not masks_of(lambda: forward(theirs)), name


def test_the_encoder_layer_pair_drops_the_attention_weights_and_the_activations(bench):
    """The encoder layer's masks include one of the attention weights' shape (B, H, T, T)
    and one of the feed-forward activations' (B, T, d_ff), on both sides."""
    x = torch.randn(2, 5, 12)
    for module in bench.build_encoder_layer(12, 3, 20, 0.1, torch.device("cpu")):
        shapes = {shape for shape, _ in masks_of(lambda: module(x))}
        assert {(2, 3, 5, 5), (2, 5, 20), (2, 5, 12)} <= shapes, type(module).__name__


def test_torch_seq2seq_refuses_a_config_it_cannot_match(bench):
    config = bench.tl.TransformerConfig(40, 40, d_model=12, num_heads=3, d_ff=20, num_layers=1, dropout=0.1)
    with pytest.raises(ValueError, match="attention_dropout == activation_dropout == dropout"):
        bench.TorchSeq2Seq(config)


def test_the_json_records_dropout_device_threads_rounds_and_sizes(bench, small_seq2seq, tmp_path):
    out = tmp_path / "speed.json"
    threads = torch.get_num_threads()
    try:
        # the device is pinned: on a machine with a GPU the benchmark would otherwise pick CUDA
        assert bench.main(["--quick", "--rounds", "1", "--threads", "1", "--dropout", "0.1", "--device", "cpu",
                           "--json", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)  # main sets them for the whole process
    result = json.loads(out.read_text())
    assert (result["dropout"], result["threads"], result["rounds"], result["mode"]) == (0.1, 1, 1, "quick")
    assert result["device"] == "cpu" and result["device_name"]
    rows = result["rows"]
    assert [row["pytorch"] for row in rows[:3]] == ["nn.MultiheadAttention", "nn.TransformerEncoderLayer",
                                                     "nn.Transformer"]
    assert [row["dropout"] for row in rows] == [0.1, 0.1, 0.1, 0.0]  # the last row compares our two paths
    assert rows[0]["sizes"] == {"batch": 2, "length": 64, "d_model": 512, "heads": 8}
    assert rows[1]["sizes"] == {"batch": 2, "length": 64, "d_model": 512, "heads": 8, "d_ff": 2048, "layers": 1}
    assert rows[2]["sizes"] == {"batch": 2, "length": 6, "d_model": 12, "heads": 3, "d_ff": 20, "layers": 2,
                                "vocab": 40}
    assert all(row["ours_ms"] > 0 and row["pytorch_ms"] > 0 and row["ratio"] > 0 for row in rows)


def test_dropout_is_zero_unless_asked_and_is_checked(bench, capsys):
    assert bench.parse_args(["--deck"]).dropout == 0.0
    with pytest.raises(SystemExit):
        bench.parse_args(["--dropout", "1.5"])
    assert "--dropout must be in [0, 1), got 1.5" in capsys.readouterr().err
