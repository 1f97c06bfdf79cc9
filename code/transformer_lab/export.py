"""The model as two ONNX graphs, for ONNX Runtime (Python, or the browser in the deck).

    paths = to_onnx(model, "exported/")
    paths.encoder   # src (B, S) -> memory (B, S, D), encoder_attention_i (B, H, S, S)
    paths.decoder   # src (B, S), memory (B, S, D), tgt (B, T) -> logits (B, T, V),
                    #   decoder_self_attention_i (B, H, T, T), cross_attention_i (B, H, T, S)

The encoder runs once per input; the decoder is one step of greedy decoding without a
cache: it reads the whole prefix ``tgt`` (``<bos>`` and the tokens chosen so far) and the
last row of ``logits`` scores the next token. ``src`` is an input of the decoder too, for
the padding mask of the cross-attention. Every layer's attention weights (equation 1,
before dropout) are outputs, as :func:`transformer_lab.record_attention` records them; i
counts layers from 0. Batch and lengths are dynamic.

The graphs come from PyTorch's TorchScript-based exporter (``torch.onnx.export(...,
dynamo=False)``): on our tiny models it takes about 0.5 s a graph, against about 5 s for
the ``torch.export``-based one, and writes smaller files. The model's argument checks
that read token values or need a plain ``int`` size step aside while it traces
(:func:`transformer_lab.checks.exporting`). Shapes: B batch, S source length, T target
length, D d_model, H heads, V target vocabulary.

Both files are written under temporary names beside their final ones and moved into place
together once both are whole: after a failure (a full disk, a read-only folder) the
directory holds the old pair or the new pair, never one of each, and the error
(:class:`OnnxWriteError`) names the file. The files get the mode ``open`` would give them
(``atomic_files``).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from .atomic_files import create_beside
from .checkpoint import describe_error
from .model import Transformer
from .recording import record_attention

OPSET = 20  # LayerNormalization needs 17; ONNX Runtime Web 1.30 runs opset 20
ENCODER_FILE, DECODER_FILE = "encoder.onnx", "decoder.onnx"


def encoder_output_names(num_layers: int) -> list[str]:
    """``memory`` then ``encoder_attention_0`` ... one per layer."""
    return ["memory"] + [f"encoder_attention_{i}" for i in range(num_layers)]


def decoder_output_names(num_layers: int) -> list[str]:
    """``logits``, then the decoder self-attention and the cross-attention of each layer."""
    return (["logits"] + [f"decoder_self_attention_{i}" for i in range(num_layers)]
            + [f"cross_attention_{i}" for i in range(num_layers)])


class EncoderWithAttention(nn.Module):
    """``forward(src (B, S)) -> (memory (B, S, D), *encoder weights (B, H, S, S))``."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, ...]:
        attention = [layer.self_attn for layer in self.model.encoder.layers]
        with record_attention(self.model, attention) as record:
            memory = self.model.encode(src)  # (B, S, D), padding masked by default
        return (memory, *record.encoder)


class DecoderStepWithAttention(nn.Module):
    """``forward(src (B, S), memory (B, S, D), tgt (B, T)) -> (logits (B, T, V),
    *decoder self-attention weights (B, H, T, T), *cross-attention weights (B, H, T, S))``."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor, memory: Tensor, tgt: Tensor) -> tuple[Tensor, ...]:
        attention = [m for layer in self.model.decoder.layers for m in (layer.self_attn, layer.cross_attn)]
        with record_attention(self.model, attention) as record:
            logits = self.model.decode(tgt, memory, self.model.src_mask(src))  # (B, T, V)
        return (logits, *record.decoder_self, *record.cross)


@dataclass(frozen=True)
class OnnxPaths:
    """The two files :func:`to_onnx` wrote."""

    encoder: Path
    decoder: Path


class OnnxWriteError(OSError):
    """An ONNX file that could not be written or moved into place (its message names it)."""


def _export(module: nn.Module, args: tuple, path: Path, inputs: dict, outputs: list[str]) -> None:
    """``inputs``: name -> its dynamic axes {axis: name}; the outputs' shapes follow them."""
    with warnings.catch_warnings():
        # the tracer's notes on Python checks it skips, and the exporter's deprecation notice
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=OPSET,
                          input_names=list(inputs), output_names=outputs,
                          dynamic_axes=inputs)


def to_onnx(model: Transformer, directory: str | os.PathLike) -> OnnxPaths:
    """Write ``encoder.onnx`` and ``decoder.onnx`` for ``model`` into ``directory`` (made
    if missing; see the module docstring for their inputs and outputs). The graphs are
    traced in evaluation mode (no dropout); ``model``'s own mode is restored afterwards."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be a transformer_lab.Transformer, got {type(model).__name__}")
    if not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a path, got {type(directory).__name__}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    num_layers, was_training = model.config.num_layers, model.training
    device = next(model.parameters()).device
    # B=2, S=5, T=3: unequal sizes, so the tracer cannot confuse one axis with another
    src = torch.full((2, 5), model.config.pad_id + 1, dtype=torch.long, device=device) % model.config.src_vocab_size
    tgt = torch.full((2, 3), model.config.pad_id + 1, dtype=torch.long, device=device) % model.config.tgt_vocab_size
    batch, source, target = {0: "batch"}, {0: "batch", 1: "source"}, {0: "batch", 1: "target"}
    paths = OnnxPaths(directory / ENCODER_FILE, directory / DECODER_FILE)
    written: dict[Path, str] = {}  # final path -> its complete temporary
    try:
        encoder, decoder = EncoderWithAttention(model).eval(), DecoderStepWithAttention(model).eval()
        with torch.no_grad():
            memory = model.encode(src)  # (2, 5, D)
            with _writing(paths.encoder, written) as tmp:
                _export(encoder, (src,), tmp, {"src": source}, encoder_output_names(num_layers))
            with _writing(paths.decoder, written) as tmp:
                _export(decoder, (src, memory, tgt), tmp,
                        {"src": source, "memory": {**batch, 1: "source"}, "tgt": target},
                        decoder_output_names(num_layers))
        _replace_together(written)
    finally:
        model.train(was_training)
        for tmp in written.values():
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return paths


def _error(path: Path, error: BaseException) -> OnnxWriteError:
    return OnnxWriteError(f"cannot write ONNX file {str(path)!r} (is the disk full or read-only?): "
                          f"{describe_error(error)}")


@contextlib.contextmanager
def _writing(path: Path, written: dict[Path, str]):
    """A temporary beside ``path`` for the block to write, flushed to disk after it and
    recorded in ``written``; a failed write is an :class:`OnnxWriteError` naming ``path``."""
    tmp = None
    try:
        fd, tmp = create_beside(path)
        os.close(fd)
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        written[path] = tmp
    except OSError as e:
        if tmp is not None and path not in written:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise _error(path, e) from e


def _replace_together(written: dict[Path, str]) -> None:
    """Move every temporary over its final path; if one move fails, put the files already
    moved back as they were (the old file, or none), so the pair stays old or new."""
    moved: list[tuple[Path, str | None]] = []  # a final path, and the name its old file is kept under
    try:
        for path, tmp in written.items():
            try:
                moved.append((path, _keep_old(path)))
                os.replace(tmp, path)
            except OSError as e:
                raise _error(path, e) from e
    except OSError:
        for path, old in reversed(moved):
            with contextlib.suppress(OSError):
                os.replace(old, path) if old is not None else os.unlink(path)
        raise
    finally:
        for _, old in moved:
            if old is not None:
                with contextlib.suppress(OSError):
                    os.unlink(old)


def _keep_old(path: Path) -> str | None:
    """A second name beside ``path`` for its current file (None when there is none): a
    hard link, so ``path`` never goes missing, or where there are no hard links a rename."""
    if not path.exists():
        return None
    fd, old = create_beside(path, ".old")
    os.close(fd)
    os.unlink(old)
    try:
        os.link(path, old)
    except OSError:
        os.replace(path, old)
    return old


def to_onnx_bytes(model: Transformer) -> tuple[bytes, bytes]:
    """The encoder's and the decoder's ONNX files as bytes (written to a temporary directory)."""
    with tempfile.TemporaryDirectory() as directory:
        paths = to_onnx(model, directory)
        return paths.encoder.read_bytes(), paths.decoder.read_bytes()
