"""``python -m transformer_lab.cli.translate`` under bad input and bad checkpoints: one
line, ``error: ...``, exit status 2, and nothing decoded before a bad option is found."""

import math
import re

import pytest
import torch

import transformer_lab as tl
from fault_helpers import copy_run, one_line_error, rewrite_checkpoint, run_cli, train
from transformer_lab import inference
from transformer_lab.cli import translate as translate_cli


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "run"
    train(out)
    return out


def translate(capsys, *args) -> tuple[int, str, str]:
    status = translate_cli.main([str(a) for a in args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def latest(run):
    return run / "checkpoints" / "step_00000002.pt"


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["config"].update(bogus=1), "has an invalid model config: TypeError: "),
    (lambda s: s["config"].update(num_heads=5), "has an invalid model config: ValueError: d_model=16 must be "
                                                "divisible by num_heads=5"),
    (lambda s: s.update(src_vocab={"tokenize": "char", "itos": ["x"]}), "has an invalid src_vocab: ValueError: "),
    (lambda s: s["model"].update({"X" + k: s["model"].pop(k) for k in list(s["model"])[3:4]}),
     "holds weights that do not fit its model config: RuntimeError: Error(s) in loading state_dict"),
    (lambda s: s["model"].update({k: v[:1] for k, v in list(s["model"].items())[3:4]}),
     "holds weights that do not fit its model config: RuntimeError: Error(s) in loading state_dict"),
])
def test_an_invalid_checkpoint_is_one_line(trained, tmp_path, capsys, edit, message):
    run = copy_run(trained, tmp_path / "run")
    rewrite_checkpoint(latest(run), edit)
    status, out, err = translate(capsys, "--checkpoint", run, "--latest", "abc")
    assert status == 2 and out == ""
    assert one_line_error(err).startswith(f"error: checkpoint {str(latest(run))!r} " + message)


def test_a_crafted_pickle_is_one_line_without_torchs_advice(tmp_path, capsys):
    path = tmp_path / "crafted.pt"
    torch.save({"weights": torch.nn.Linear(2, 2)}, path)  # a module: refused by weights_only loading
    status, out, err = translate(capsys, "--checkpoint", path, "abc")
    line = one_line_error(err)
    assert status == 2 and out == ""
    assert line == f"error: {str(path)!r} is not a checkpoint this package wrote: it holds Python objects other " \
                   f"than tensors, numbers, strings and containers, and was refused without running any of its code"


@pytest.mark.parametrize("texts, index", [([""], 0), (["abc", "   "], 1)])
def test_empty_input_is_refused(trained, capsys, texts, index):
    status, out, err = translate(capsys, "--checkpoint", trained, *texts)
    assert status == 2 and out == ""
    assert one_line_error(err) == f"error: texts[{index}] must hold something to translate, got {texts[index]!r}"


def test_translate_refuses_an_empty_text_from_python(trained):
    model, src_vocab, tgt_vocab = tl.load_model(trained)
    with pytest.raises(ValueError, match="text must hold at least one symbol to translate, got ''"):
        tl.translate(model, src_vocab, tgt_vocab, "")


@pytest.mark.parametrize("option, message", [
    (["--layer", "3"], r"layer must be an int in \[-1, 1\), got 3"),
    (["--layer", "-2"], r"layer must be an int in \[-1, 1\), got -2"),
    (["--head", "2"], r"head must be in \[0, 2\), got 2"),
])
def test_layer_and_head_are_checked_before_any_decoding(trained, capsys, monkeypatch, option, message):
    decoded = []
    real = inference.generate
    monkeypatch.setattr(inference, "generate", lambda *a, **k: decoded.append(1) or real(*a, **k))
    status, out, err = translate(capsys, "--checkpoint", trained, "--show-alignment", *option, "abc", "cab")
    assert status == 2 and out == "" and decoded == []
    assert re.fullmatch("error: " + message, one_line_error(err))


@pytest.mark.parametrize("beam", ["1", "3"])
def test_a_model_with_nan_weights_fails_naming_the_decoding_step(trained, tmp_path, capsys, beam):
    run = copy_run(trained, tmp_path / "run")
    rewrite_checkpoint(run / "checkpoints" / "averaged.pt",
                       lambda s: s["model"]["output_projection.bias"].fill_(math.nan))
    status, out, err = translate(capsys, "--checkpoint", run, "--beam-size", beam, "abc")
    assert status == 2 and out == ""
    assert one_line_error(err).startswith("error: decoding step 1: the model's logits are not finite (NaN or inf)")


def test_a_bad_length_penalty_is_refused(trained, capsys):
    status, out, err = translate(capsys, "--checkpoint", trained, "--beam-size", "2", "--length-penalty", "nan", "ab")
    assert status == 2 and one_line_error(err) == "error: length_penalty must be a finite number >= 0.0, got nan"


@pytest.mark.slow
def test_the_command_line_itself_prints_one_line_for_a_broken_checkpoint(trained, tmp_path):
    run = copy_run(trained, tmp_path / "run")
    rewrite_checkpoint(latest(run), lambda s: s["config"].update(bogus=1))
    result = run_cli("translate", "--checkpoint", run, "--latest", "abc")
    assert result.returncode == 2 and result.stdout == ""
    assert one_line_error(result.stderr).startswith(f"error: checkpoint {str(latest(run))!r} has an invalid")
