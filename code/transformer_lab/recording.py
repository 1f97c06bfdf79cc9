"""Attention weights out of a model, without changing what any forward pass returns.

    with record_attention(model) as attn:
        logits = model(src, tgt)
    attn.encoder[i]        # (B, H, S, S)  encoder self-attention of layer i
    attn.decoder_self[i]   # (B, H, T, T)  masked decoder self-attention
    attn.cross[i]          # (B, H, T, S)  encoder-decoder attention (Section 3.2.3)

Every forward pass returns one tensor. Inside the ``with`` block the recorded
:class:`MultiHeadAttention` modules compute the weights of equation (1) explicitly and
hand them over; outside it they run the fused kernel again, which never forms them.
Record only some modules by naming them: ``record_attention(model,
[model.decoder.layers[-1].cross_attn])``. Works on a whole :class:`Transformer`, a stack,
a layer or a single :class:`MultiHeadAttention` (``attn.weights``). An attention variant
is recorded too when it does what :class:`MultiHeadAttention` does: keep an
``on_weights`` attribute (``None`` by default) and hand it to
:func:`scaled_dot_product_attention`.

Shapes: B batch, H heads, S source length, T target length.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

from torch import Tensor, nn

from .layers import DecoderLayer, EncoderLayer
from .multi_head_attention import MultiHeadAttention

KINDS = ("encoder", "decoder_self", "cross")


def _recordable(module: nn.Module) -> bool:
    """A MultiHeadAttention, or a variant with the same ``on_weights`` hook."""
    return isinstance(module, MultiHeadAttention) or hasattr(module, "on_weights")


def _kind(root: nn.Module, name: str) -> str | None:
    """Which of the three uses of attention (Section 3.2.3) the module ``name`` serves."""
    if not name:
        return None  # the root itself: a lone MultiHeadAttention
    parent_name, _, attribute = name.rpartition(".")
    parent = root.get_submodule(parent_name)
    if isinstance(parent, EncoderLayer):
        return "encoder"
    if isinstance(parent, DecoderLayer):
        return "decoder_self" if attribute == "self_attn" else "cross"
    return None


class AttentionRecord:
    """The weights recorded inside :func:`record_attention`, one (B, H, T, S) tensor per
    module and per its latest call, detached from the graph.

    ``encoder``, ``decoder_self`` and ``cross`` list one entry per layer, in order
    (``None`` for a layer not recorded); ``maps`` holds them by module name;
    ``weights`` is the one tensor when a single module was recorded.
    """

    def __init__(self, root: nn.Module, names: list[str]):
        self.maps: dict[str, Tensor] = {}
        self._recorded = names
        self._names: dict[str, list[str]] = {kind: [] for kind in KINDS}
        for name, module in root.named_modules():
            kind = _kind(root, name) if _recordable(module) else None
            if kind is not None:
                self._names[kind].append(name)

    def store(self, name: str, weights: Tensor) -> None:
        self.maps[name] = weights.detach()

    def _layers(self, kind: str) -> list[Tensor | None]:
        return [self.maps.get(name) for name in self._names[kind]]

    @property
    def encoder(self) -> list[Tensor | None]:
        """Encoder self-attention weights (B, H, S, S), one per layer."""
        return self._layers("encoder")

    @property
    def decoder_self(self) -> list[Tensor | None]:
        """Masked decoder self-attention weights (B, H, T, T), one per layer."""
        return self._layers("decoder_self")

    @property
    def cross(self) -> list[Tensor | None]:
        """Encoder-decoder attention weights (B, H, T, S), one per layer."""
        return self._layers("cross")

    @property
    def weights(self) -> Tensor:
        """The weights of the one recorded module."""
        if len(self._recorded) != 1:
            raise ValueError(
                f"weights needs exactly one recorded module, got {len(self._recorded)}; "
                f"read .encoder, .decoder_self, .cross or .maps instead"
            )
        name = self._recorded[0]
        if name not in self.maps:
            raise ValueError(f"the recorded module {name or 'model'!r} has not run yet")
        return self.maps[name]


@contextlib.contextmanager
def record_attention(model: nn.Module, modules: Iterable[MultiHeadAttention] | None = None) -> Iterator[AttentionRecord]:
    """Record the attention weights of ``model``'s multi-head attention modules (all, or
    the ``modules`` given) while the ``with`` block runs; see the module docstring."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    found = {module: name for name, module in model.named_modules() if _recordable(module)}
    if not found:
        raise ValueError(f"model must contain a MultiHeadAttention, got {type(model).__name__}")
    chosen = list(found) if modules is None else list(modules)
    for module in chosen:
        if module not in found:
            raise ValueError(f"modules must be MultiHeadAttention modules of model (or variants with "
                             f"on_weights), got {type(module).__name__}")
        if module.on_weights is not None:
            raise RuntimeError(f"{found[module] or 'model'!r} is already being recorded")
    record = AttentionRecord(model, [found[m] for m in chosen])
    try:
        for module in chosen:
            module.on_weights = lambda weights, name=found[module]: record.store(name, weights)
        yield record
    finally:
        for module in chosen:
            module.on_weights = None
