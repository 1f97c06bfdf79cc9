"""The model under ``torch.compile``: the training step is one graph (``fullgraph=True``, no
graph break) that trains as the eager model does; greedy and beam decoding give eager's
tokens; ``record_attention`` runs its modules in eager mode and says so.

The inductor compile of a training step takes tens of seconds on a 2-core CPU, so that
test is marked slow (it still runs in CI); the others trace with the ``eager`` or
``aot_eager`` backends (dynamo's capture, and AOTAutograd's for the backward pass) on the
CPU, and compile with inductor on CUDA (`pytest -m cuda`).
"""

import copy
import os
import tempfile

import pytest
import torch

import transformer_lab as tl

# Inductor's on-disk caches do not key on ATEN_CPU_CAPABILITY: a kernel generated with AVX-512
# vectors by one run failed to compile ("'at::vec' has not been declared") in a run under
# ATEN_CPU_CAPABILITY=default sharing /tmp/torchinductor_<user>. Each session compiles into a
# folder of its own (set at collection, before any test compiles), unless the user chose one.
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor-tests-"))

B, S, T, SRC_V, TGT_V = 2, 7, 6, 23, 19


def tiny_model(device, **overrides) -> tl.Transformer:
    options = {**dict(d_model=16, num_heads=2, d_ff=32, num_layers=1, dropout=0.0), **overrides}
    return tl.Transformer(tl.TransformerConfig.tiny(SRC_V, TGT_V, **options)).to(device)


def padded_batch(device):
    """src (B, S) and tgt (B, T) with padding (id 0) in both, so every mask path is traced."""
    src = torch.randint(3, SRC_V, (B, S))
    tgt = torch.randint(3, TGT_V, (B, T))
    src[1, -2:] = 0
    tgt[0, -1] = 0
    return src.to(device), tgt.to(device)


def train(model, forward_loss, src, tgt, steps=2):
    """Losses of ``steps`` plain gradient-descent updates. (Not Adam: W^K's bias has an
    exactly zero gradient, softmax ignores a constant added to a row of scores, and Adam
    would turn the last-digit noise there into full-size steps of either sign.)"""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = forward_loss(src, tgt[:, :-1], tgt[:, 1:])
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def loss_of(model):
    loss_fn = tl.LabelSmoothingLoss(0.1)
    return lambda src, tgt_in, tgt_out: loss_fn(model(src, tgt_in), tgt_out)


@pytest.mark.slow
def test_a_compiled_training_step_is_one_graph_and_trains_as_eager(device):
    """Inductor compiles forward, loss and backward with fullgraph=True (a graph break would
    raise); two updates give eager's losses and weights."""
    torch._dynamo.reset()
    model = tiny_model(device)
    twin = copy.deepcopy(model)
    src, tgt = padded_batch(device)
    expected = train(model, loss_of(model), src, tgt)
    compiled = torch.compile(loss_of(twin), fullgraph=True, dynamic=False)
    got = train(twin, compiled, src, tgt)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    for (name, a), b in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.slow
def test_the_training_step_traces_as_one_graph_with_dropout_padding_and_autocast():
    """Every place that drops (embeddings, attention weights, activations, residuals), the
    padding masks, and bfloat16 autocast: no graph break in forward or backward."""
    torch._dynamo.reset()
    model = tiny_model("cpu", dropout=0.1, attention_dropout=0.1, activation_dropout=0.1).train()
    src, tgt = padded_batch("cpu")
    compiled = torch.compile(loss_of(model), fullgraph=True, backend="aot_eager")
    with torch.autocast("cpu", torch.bfloat16):
        loss = compiled(src, tgt[:, :-1], tgt[:, 1:])
    loss.backward()
    assert torch.isfinite(loss) and all(p.grad is not None for p in model.parameters())


def test_compiled_checks_skip_only_what_reads_values():
    """Under compile a token id out of range is not read (no graph break); shapes and
    dtypes are still checked while tracing, with the eager messages."""
    torch._dynamo.reset()
    model = tiny_model("cpu").eval()
    src, tgt = padded_batch("cpu")
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(src, tgt), model(src, tgt))
    with pytest.raises(Exception, match=r"src and tgt must have the same batch size, got 2 and 1"):
        compiled(src, tgt[:1])
    with pytest.raises(ValueError, match=r"src must hold ids in \[0, 23\)"):
        model(torch.full((1, 3), SRC_V), tgt[:1])  # eager keeps the value check


def decoding_backend(device) -> str:
    # inductor on CUDA; on the CPU, dynamo's capture run eagerly (an inductor compile of
    # every decoding shape would take minutes on two cores)
    return "inductor" if torch.device(device).type == "cuda" else "eager"


@pytest.mark.slow
def test_greedy_and_beam_decoding_under_compile_give_eager_tokens(device):
    """Compile the two stacks (their call is what decoding runs); the key/value cache
    grows by one step per call, so the decoder recompiles with a dynamic length once."""
    torch._dynamo.reset()
    model = tiny_model(device).eval()
    src, _ = padded_batch(device)
    greedy = tl.greedy_decode(model, src, 8, 1, 2)
    beam = tl.beam_search(model, src, 3, 8, 1, 2)
    backend = decoding_backend(device)
    model.encoder.compile(backend=backend)
    model.decoder.compile(backend=backend)
    assert torch.equal(tl.greedy_decode(model, src, 8, 1, 2), greedy)
    assert torch.equal(tl.beam_search(model, src, 3, 8, 1, 2), beam)


@pytest.mark.slow
def test_record_attention_under_compile_runs_eagerly_and_says_so():
    torch._dynamo.reset()
    model = tiny_model("cpu").eval()
    src, tgt = padded_batch("cpu")
    with tl.record_attention(model) as expected:
        logits = model(src, tgt)
    compiled = torch.compile(model, backend="eager")
    compiled(src, tgt)  # compiled once without recording
    with tl.record_attention(model) as attn:
        with pytest.warns(UserWarning, match="run in eager mode under torch.compile"):
            recorded = compiled(src, tgt)
    torch.testing.assert_close(recorded, logits)
    for kind in ("encoder", "decoder_self", "cross"):
        for got, want in zip(getattr(attn, kind), getattr(expected, kind)):
            torch.testing.assert_close(got, want)


@pytest.mark.cuda
def test_a_compiled_bfloat16_training_step_on_cuda_is_close_to_eager():
    """bfloat16 autocast, the paper's dropout off: the compiled step's losses track eager's
    within bfloat16's precision."""
    torch._dynamo.reset()
    model = tiny_model("cuda")
    twin = copy.deepcopy(model)
    src, tgt = padded_batch("cuda")

    def autocast(forward_loss):
        def run(*args):
            with torch.autocast("cuda", torch.bfloat16):
                return forward_loss(*args)
        return run

    expected = train(model, autocast(loss_of(model)), src, tgt, steps=3)
    got = train(twin, autocast(torch.compile(loss_of(twin), fullgraph=True, dynamic=False)), src, tgt, steps=3)
    torch.testing.assert_close(got, expected, rtol=2e-2, atol=2e-2)
