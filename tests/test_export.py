"""The model as ONNX graphs (transformer_lab.export): ONNX Runtime (Python) computes the
same logits, memory and attention weights as PyTorch, to 1e-5, at batch sizes and lengths
other than the ones traced, and greedy decoding with it picks the same tokens."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import transformer_lab as tl
from fault_helpers import cli_env
from transformer_lab import checks
from transformer_lab.export import (
    decoder_output_names,
    encoder_output_names,
    to_onnx,
    to_onnx_bytes,
)

ort = pytest.importorskip("onnxruntime")

TOLERANCE = 1e-5
# (B, S, T): other sizes than the (2, 5, 3) the exporter traces, lengths 1 included
SHAPES = [(1, 1, 1), (2, 7, 5), (3, 11, 8), (4, 3, 12)]


class Runtime:
    """The two exported graphs in ONNX Runtime, run as the browser runs them."""

    def __init__(self, model: tl.Transformer, directory):
        paths = to_onnx(model, directory)
        self.encoder = ort.InferenceSession(str(paths.encoder), providers=["CPUExecutionProvider"])
        self.decoder = ort.InferenceSession(str(paths.decoder), providers=["CPUExecutionProvider"])

    def run(self, src: torch.Tensor, tgt: torch.Tensor) -> tuple[list, list]:
        encoded = self.encoder.run(None, {"src": src.numpy()})
        decoded = self.decoder.run(None, {"src": src.numpy(), "memory": encoded[0], "tgt": tgt.numpy()})
        return encoded, decoded

    def greedy_decode(self, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int, pad_id: int) -> np.ndarray:
        memory = self.encoder.run(["memory"], {"src": src.numpy()})[0]
        tokens = np.full((src.size(0), 1), bos_id, dtype=np.int64)
        finished = np.zeros(src.size(0), dtype=bool)
        while tokens.shape[1] < max_len and not finished.all():
            logits = self.decoder.run(["logits"], {"src": src.numpy(), "memory": memory, "tgt": tokens})[0]
            next_token = np.where(finished, pad_id, logits[:, -1].argmax(-1))
            tokens = np.concatenate([tokens, next_token[:, None]], axis=1)
            finished |= next_token == eos_id
        return tokens


def random_tokens(batch: int, length: int, vocab_size: int, pad_id: int = 0) -> torch.Tensor:
    """Ids in [4, vocab) (no special tokens); every row after the first ends in padding."""
    tokens = torch.randint(4, vocab_size, (batch, length))
    for row in range(1, batch):
        tokens[row, length - (row % max(length - 1, 1)) :] = pad_id
    return tokens


def pytorch_outputs(model, src, tgt):
    with torch.no_grad(), tl.record_attention(model) as attention:
        memory = model.encode(src)
        logits = model.decode(tgt, memory, model.src_mask(src))
    return memory, logits, attention


def assert_parity(model: tl.Transformer, runtime: Runtime, batch: int, source: int, target: int) -> None:
    src = random_tokens(batch, source, model.config.src_vocab_size)
    tgt = random_tokens(batch, target, model.config.tgt_vocab_size)
    tgt[:, 0] = tl.data.BOS_ID
    memory, logits, attention = pytorch_outputs(model, src, tgt)
    encoded, decoded = runtime.run(src, tgt)
    close = dict(atol=TOLERANCE, rtol=0)
    torch.testing.assert_close(torch.from_numpy(encoded[0]), memory, **close)
    torch.testing.assert_close(torch.from_numpy(decoded[0]), logits, **close)
    layers = model.config.num_layers
    for got, want in zip(encoded[1:], attention.encoder):
        assert got.shape == (batch, model.config.num_heads, source, source)
        torch.testing.assert_close(torch.from_numpy(got), want, **close)
    for got, want in zip(decoded[1:], attention.decoder_self + attention.cross):
        torch.testing.assert_close(torch.from_numpy(got), want, **close)
    assert len(encoded) == 1 + layers and len(decoded) == 1 + 2 * layers


@pytest.fixture(scope="module")
def random_model():
    torch.manual_seed(1)
    config = tl.TransformerConfig.tiny(23, 19, d_model=12, num_heads=3, d_ff=20, num_layers=2)
    return tl.Transformer(config).eval()


@pytest.fixture(scope="module")
def pre_ln_model():
    """Pre-LN (a final LayerNorm in each stack), learned positions, untied embeddings."""
    torch.manual_seed(2)
    config = tl.TransformerConfig.tiny(17, 29, d_model=12, num_heads=3, d_ff=20, num_layers=3, norm_first=True,
                                       positional="learned", tie_embeddings=False, max_len=64)
    return tl.Transformer(config).eval()


@pytest.fixture(scope="module")
def trained():
    """A run of about 5 s on the pronoun task (the deck's, at half the width): its model
    names the noun "it" refers to."""
    return tl.fit(tl.RunConfig(task="pronoun", steps=150, num_train=3000, num_eval=50, seed=0, threads=1,
                               d_model=32, num_heads=2, d_ff=64, device="cpu"))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "B{}-S{}-T{}".format(*s))
@pytest.mark.parametrize("name", ["random_model", "pre_ln_model"])
def test_onnx_runtime_matches_pytorch(request, tmp_path_factory, name, shape):
    model = request.getfixturevalue(name)
    runtime = Runtime(model, tmp_path_factory.mktemp(name))
    assert_parity(model, runtime, *shape)


def assert_same_greedy_tokens(model, runtime, src: torch.Tensor, max_len: int) -> np.ndarray:
    for rows in (src[:1], src[-1:], src):  # one at a time, and the whole padded batch
        want = tl.greedy_decode(model, rows, max_len=max_len, bos_id=tl.data.BOS_ID, eos_id=tl.data.EOS_ID)
        got = runtime.greedy_decode(rows, max_len, tl.data.BOS_ID, tl.data.EOS_ID, pad_id=model.config.pad_id)
        np.testing.assert_array_equal(got, want.numpy())
    return got


def test_trained_model_matches_and_decodes_the_same_tokens(trained, tmp_path):
    model = trained.model.eval()
    runtime = Runtime(model, tmp_path)
    for shape in SHAPES:
        assert_parity(model, runtime, *shape)
    data = tl.make_task("pronoun", seed=5, num_train=1, num_validation=0, num_test=16)
    sources = [torch.tensor(trained.src_vocab.encode(s)) for s, _ in data.test]
    src = torch.nn.utils.rnn.pad_sequence(sources, batch_first=True, padding_value=0)  # (16, S), padded rows
    assert (src == 0).any()
    tokens = assert_same_greedy_tokens(model, runtime, src, max_len=src.size(1) + 4)
    answers = [trained.tgt_vocab.decode(row.tolist()) for row in tokens]
    assert trained.test["exact_match"] == 1.0  # the comparison is about a model that has learned
    assert answers == [answer for _, answer in data.test]


def test_random_model_decodes_the_same_tokens_for_many_steps(tmp_path):
    torch.manual_seed(4)
    model = tl.Transformer(tl.TransformerConfig.tiny(23, 19, d_model=12, num_heads=3, d_ff=20)).eval()
    with torch.no_grad():
        model.output_projection.bias[tl.data.EOS_ID] = -1e3  # never ends: every step is compared
    runtime = Runtime(model, tmp_path)
    src = random_tokens(3, 6, model.config.src_vocab_size)
    tokens = assert_same_greedy_tokens(model, runtime, src, max_len=12)
    assert tokens.shape == (3, 12)


def test_outputs_are_named_for_every_layer(pre_ln_model, tmp_path):
    runtime = Runtime(pre_ln_model, tmp_path)
    assert [o.name for o in runtime.encoder.get_outputs()] == encoder_output_names(3)
    assert [o.name for o in runtime.decoder.get_outputs()] == decoder_output_names(3)
    assert decoder_output_names(2) == ["logits", "decoder_self_attention_0", "decoder_self_attention_1",
                                       "cross_attention_0", "cross_attention_1"]
    assert [i.name for i in runtime.decoder.get_inputs()] == ["src", "memory", "tgt"]


def test_a_model_in_training_mode_is_exported_without_dropout_and_stays_in_training_mode(tmp_path):
    config = tl.TransformerConfig.tiny(23, 19, d_model=12, num_heads=3, d_ff=20, dropout=0.5, attention_dropout=0.5)
    model = tl.Transformer(config).train()
    runtime = Runtime(model, tmp_path)
    assert model.training and all(m.training for m in model.modules())
    model.eval()
    assert_parity(model, runtime, 2, 7, 5)  # dropout at 0.5 would be far off


def test_eager_checks_still_run_after_export(random_model, tmp_path):
    to_onnx(random_model, tmp_path)
    assert not checks.exporting()
    with pytest.raises(ValueError, match=r"src must hold ids in \[0, 23\).*got id 23"):
        random_model.encode(torch.tensor([[5, 23]]))
    with pytest.raises(ValueError, match="size must be a non-negative int, got -1"):
        tl.causal_mask(-1)


def test_checks_know_when_the_exporter_runs(tmp_path):
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x):
            seen.append(checks.exporting())
            return x + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the exporter to_onnx uses, deprecated since 2.9
        torch.onnx.export(Probe(), (torch.zeros(2),), str(tmp_path / "probe.onnx"), dynamo=False)
    Probe()(torch.zeros(2))
    assert seen[0] is True and seen[-1] is False and set(seen[:-1]) == {True}


def test_bytes_are_the_files(random_model, tmp_path):
    encoder, decoder = to_onnx_bytes(random_model)
    paths = to_onnx(random_model, tmp_path / "made" / "here")
    assert encoder[:2] == paths.encoder.read_bytes()[:2] and len(decoder) == paths.decoder.stat().st_size


def test_bad_arguments_are_named(random_model, tmp_path):
    with pytest.raises(TypeError, match="model must be a transformer_lab.Transformer, got Linear"):
        to_onnx(torch.nn.Linear(2, 2), tmp_path)
    with pytest.raises(TypeError, match="directory must be a path, got int"):
        to_onnx(random_model, 3)


# -- writing the files: a full disk, a failed replace, file modes (issue 23, items 4 and 6) ----------

EXPORT_SCRIPT = """
import resource, sys, torch
import transformer_lab as tl
from transformer_lab.export import to_onnx
torch.manual_seed(int(sys.argv[2]))
model = tl.Transformer(tl.TransformerConfig.tiny(23, 19, d_model=12, num_heads=3, d_ff=20))
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # writing past it fails (EFBIG), as on a full disk
try:
    to_onnx(model, sys.argv[1])
except Exception as e:
    print(f"{type(e).__name__}: {e}", file=sys.stderr)
    sys.exit(3)
"""


def export_in_subprocess(directory, seed: int, limit: int):
    return subprocess.run([sys.executable, "-c", EXPORT_SCRIPT, str(directory), str(seed), str(limit)],
                          capture_output=True, text=True, env=cli_env(), timeout=120)


def files_in(directory) -> dict:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.mark.slow
@pytest.mark.parametrize("failing", ["encoder.onnx", "decoder.onnx"])
def test_a_full_disk_names_the_file_and_keeps_both_old_files(tmp_path, failing):
    """RLIMIT_FSIZE, as the fault tests use it: the encoder's write fails, or the encoder's
    succeeds and the decoder's (the larger file) fails. Either way the old pair stays whole."""
    first = export_in_subprocess(tmp_path, seed=1, limit=10**9)
    assert first.returncode == 0, first.stderr
    before = files_in(tmp_path)
    sizes = {name: len(data) for name, data in before.items()}
    assert sizes["encoder.onnx"] < sizes["decoder.onnx"]  # so a limit between them fails only the decoder
    limit = sizes["encoder.onnx"] // 2 if failing == "encoder.onnx" else sum(sizes.values()) // 2
    result = export_in_subprocess(tmp_path, seed=2, limit=limit)
    assert result.returncode == 3
    assert result.stderr.startswith(f"OnnxWriteError: cannot write ONNX file {str(tmp_path / failing)!r} (is the "
                                    f"disk full or read-only?): OSError: [Errno 27] File too large"), result.stderr
    assert files_in(tmp_path) == before  # both old files, byte for byte, and no temporary left behind


def test_a_failed_replace_puts_the_old_pair_back(random_model, pre_ln_model, tmp_path, monkeypatch):
    """The decoder cannot be moved into place after the encoder was: the old encoder
    returns, so the directory never holds one new file beside one old one."""
    to_onnx(random_model, tmp_path)
    before = files_in(tmp_path)
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith("decoder.onnx"):
            raise PermissionError(13, "Permission denied", str(dst))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError, match=f"cannot write ONNX file {str(tmp_path / 'decoder.onnx')!r} .*Permission "
                                      f"denied"):
        to_onnx(pre_ln_model, tmp_path)
    assert files_in(tmp_path) == before
    monkeypatch.undo()
    paths = to_onnx(pre_ln_model, tmp_path)  # and a later export replaces both
    after = files_in(tmp_path)
    assert sorted(after) == sorted(before) and all(after[name] != before[name] for name in before)
    assert (paths.encoder.name, paths.decoder.name) == ("encoder.onnx", "decoder.onnx")
