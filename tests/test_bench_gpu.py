"""benchmarks/bench_gpu.py compares like with like: PyTorch's model gets our weights and
gives our loss (checked before any timing), every row is planned as documented, and the
JSON records the device, the ceilings and each row. (Timings are never asserted here.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gpu"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_gpu", None)


def tiny(bench):
    return bench.SIZES["tiny"][0][0]


def test_pytorch_s_model_with_our_weights_gives_our_loss_and_the_check_sees_a_difference(bench):
    size = tiny(bench)
    check = bench.loss_check(size, torch.device("cpu"))
    assert check["same"] and check["ours"] == pytest.approx(check["pytorch"], rel=1e-5)
    ours, theirs = bench.build_pair(size, 0.0, torch.device("cpu"))
    src, tgt = bench.make_batch(size.with_batch(3), torch.device("cpu"), padding=True)
    assert (src == 0).any() and (tgt == 0).any()
    with torch.no_grad():
        torch.testing.assert_close(theirs(src, tgt), ours(src, tgt), rtol=1e-4, atol=1e-5)
        theirs.transformer.decoder.layers[0].linear2.weight[0, 0] += 0.5  # (a shift of every output would vanish in LayerNorm)
        assert not torch.allclose(theirs(src, tgt), ours(src, tgt), rtol=1e-4, atol=1e-5)


def test_rows_run_bf16_first_and_tf32_only_on_cuda(bench):
    args = bench.parse_args(["--device", "cpu"])
    rows = bench.plan("cpu", torch.device("cpu"), args)
    assert {r.precision for r in rows} == {"fp32", "bf16"}
    assert [r.precision for r in rows[:4]] == ["bf16"] * 4
    assert [(r.size.name, r.dropout) for r in rows[:4]] == [("small", 0.1), ("small", 0.0), ("base", 0.1),
                                                             ("base", 0.0)]
    compiled = [r for r in rows if r.compile]
    assert [(r.precision, r.dropout, r.compile) for r in compiled] == [("bf16", 0.1, "layers")]
    args = bench.parse_args(["--device", "cpu", "--modes", "compiled", "--compile", "whole"])
    assert {r.mode for r in bench.plan("cpu", torch.device("cpu"), args)} == {"compiled (whole)"}


def test_the_paper_sized_rows_hold_about_25000_tokens_a_side(bench):
    """Section 5.1: "approximately 25000 source tokens and 25000 target tokens"."""
    for size in bench.SIZES["cuda"][1]:
        assert 24_000 <= size.batch * size.length <= 26_000


def test_the_json_records_the_device_the_loss_check_the_ceiling_and_each_row(bench, tmp_path):
    out = tmp_path / "gpu.json"
    threads = torch.get_num_threads()
    try:
        assert bench.main(["--tiny", "--device", "cpu", "--modes", "eager", "--precisions", "fp32",
                           "--rounds", "1", "--threads", "1", "--json", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)
    result = json.loads(out.read_text())
    assert result["device"] == "cpu" and result["device_name"] and result["torch"] == torch.__version__
    assert [c["same"] for c in result["loss_check"]] == [True]
    assert set(result["ceilings_tflops"]) == {"fp32"} and result["ceilings_tflops"]["fp32"] > 0
    (row,) = result["rows"]
    assert (row["precision"], row["mode"], row["dropout"], row["size"]) == ("fp32", "eager", 0.1, "tiny")
    assert row["ratio_min"] <= row["ratio"] <= row["ratio_max"]
    assert row["ours_tflops"] > 0 and row["ours_share"] == pytest.approx(row["ours_tflops"] / row["ceiling_tflops"])
    assert row["ours_peak_bytes"] is None  # peak memory is a GPU figure


def test_bad_arguments_are_named(bench, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--precisions", "fp16"])
    assert "--precisions must be among ('fp32', 'tf32', 'bf16'), got 'fp16'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.parse_args(["--modes", "jit"])
    assert "--modes must be among ('eager', 'compiled'), got 'jit'" in capsys.readouterr().err
