"""Where a layer goes wrong. The learner's layer and the package's run on the same input
with their stages recorded, and the report names the first stage whose result differs.

Nothing in the package or the learner's code changes: the stages are read through forward
hooks on the sub-modules (their inputs and outputs), wrappers on the instance's
``split_heads`` and ``merge_heads`` while the call runs, and, for attention, a
``TorchFunctionMode`` that sees the softmax and the product of the weights with the values.
A stage the learner's code computes some other way (heads split inline, a loop over the
heads) is not seen; the report says so and compares the stages it saw.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.overrides import TorchFunctionMode

from .compare import value_difference


class StageLog:
    """The stages one call recorded: a value per key, in the order they came."""

    def __init__(self):
        self.values: dict[str, object] = {}
        self.order: list[str] = []
        self.raised = False  # the call ended in an exception (or changed its input)
        self.module: nn.Module | None = None  # the layer whose call this records

    def add(self, key: str, value) -> None:
        if key in self.values:  # the second call of a sub-module (decoding step by step)
            n = sum(k.split(" #")[0] == key for k in self.values) + 1
            key = f"{key} #{n}"
        self.values[key] = _copy(value)
        self.order.append(key)


def _copy(value):
    if isinstance(value, Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _tensors(fn, args, kwargs) -> dict[str, Tensor]:
    """A call's tensor arguments by parameter name (the cache and None left out)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {f"argument {i}": a for i, a in enumerate(args)} | dict(kwargs)
    return {name: v for name, v in bound.items() if isinstance(v, Tensor)}


def _one_or_all(tensors: dict[str, Tensor]):
    """A sub-module's one input as a tensor, several (query, key, value, mask) by name."""
    return next(iter(tensors.values())) if len(tensors) == 1 else tensors


@dataclass(frozen=True)
class StageSpec:
    """How to record a layer's stages and how to name them.

    ``record(module, log)`` is a context manager that fills ``log`` while the module
    runs; ``order(module)`` the stage keys in the order a reader follows them (None: the
    package's call order); ``describe(key, module)`` the words for a key; ``required(key)``
    whether a stage the learner's code never reaches is itself the difference (a LayerNorm
    never called) rather than a stage computed some other way."""

    record: Callable
    describe: Callable[[str, nn.Module], str]
    order: Callable[[nn.Module], list[str] | None] = lambda module: None
    required: Callable[[str], bool] = lambda key: True

    def new_log(self) -> StageLog:
        return StageLog()


def locate(spec: StageSpec, package: StageLog, learner: StageLog, module: nn.Module) -> list[str]:
    """Report lines naming the first stage where ``learner`` differs from ``package`` (the
    package's layer, ``module``, gives the words), the stages that agree before it and
    those the learner's code computed out of sight; [] when every stage agrees."""
    keys = spec.order(module) or package.order
    agree, unseen = [], []
    for key in keys:
        if key not in package.values:
            continue
        words = spec.describe(key, module)
        if key not in learner.values:
            if learner.raised and _after_last(learner, package, key):
                return _lines(f"not reached: your code stopped before {words}", agree, unseen)
            if spec.required(key):
                point = key.split(":")[0].split(" #")[0]
                return _lines(f"first stage that differs from the package's: {words}: your code does not call "
                              f"self.{point} here (the package does)", agree, unseen)
            unseen.append(words)
            continue
        diff = value_difference(package.values[key], learner.values[key])
        if diff is not None:
            return _lines(f"first stage that differs from the package's: {words}: {diff}", agree, unseen)
        agree.append(words)
    return []


def _after_last(learner: StageLog, package: StageLog, key: str) -> bool:
    seen = [package.order.index(k) for k in learner.order if k in package.order]
    return not seen or package.order.index(key) > max(seen)


def _lines(first: str, agree: list[str], unseen: list[str]) -> list[str]:
    lines = [first]
    if agree:  # "the projections: Q W^Q ..." and "... K W^K ..." are one stage, the projections
        stages = list(dict.fromkeys(words.split(": ")[0] for words in agree))
        lines.append(f"the stages before it agree: {'; '.join(stages)}")
    if unseen:
        lines.append(f"not seen in your code (computed another way, not compared): {'; '.join(unseen)}")
    return lines


# --------------------------------------------------------------------------- layers


def layer_stages(points: tuple[str, ...], words: Callable[[str, nn.Module], str]) -> StageSpec:
    """Stages of a layer made of sub-modules: the inputs and output of each of ``points``
    (attributes of the layer; the learner's are named as the docstring says) and the
    layer's output."""

    @contextmanager
    def record(module: nn.Module, log: StageLog):
        handles = []
        for point in points:
            sub = getattr(module, point, None)
            if not isinstance(sub, nn.Module):
                continue
            handles.append(sub.register_forward_pre_hook(
                lambda m, args, kwargs, p=point: log.add(f"{p}:input", _one_or_all(_tensors(m.forward, args, kwargs))),
                with_kwargs=True))
            handles.append(sub.register_forward_hook(lambda m, args, out, p=point: log.add(f"{p}:output", out)))
        handles.append(module.register_forward_hook(lambda m, args, out: log.add("output", out)))
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    return StageSpec(record=record, describe=lambda key, module: _numbered(key, module, words))


def _numbered(key: str, module: nn.Module, words) -> str:
    base, _, n = key.partition(" #")
    text = words(base, module)
    return f"{text}, call {n}" if n else text


def residual_layer_words(sublayers: tuple[tuple[str, str], ...]) -> Callable[[str, nn.Module], str]:
    """Words for the stages of an encoder or decoder layer whose sub-layer i (attribute,
    description) sits in a residual connection with ``norm{i}``, post-LN or pre-LN as the
    package's layer is built. Each starts with its stage ("sub-layer 1 (the self-attention)",
    "residual 1", "norm1"), what the report lists among the stages that agree."""
    index = {point: i for i, (point, _) in enumerate(sublayers, 1)}
    desc = {i: d for i, (_, d) in enumerate(sublayers, 1)}

    def words(key: str, module: nn.Module) -> str:
        point, _, kind = key.partition(":")
        if key == "output":
            return "the layer's output"
        if point in index:
            i = index[point]
            return f"sub-layer {i} ({desc[i]}): its {'inputs' if kind == 'input' else 'output'}"
        i = int(point.removeprefix("norm"))
        if getattr(module, "norm_first", False):
            before = "the layer's input x" if i == 1 else f"residual {i - 1}, x + Dropout(sub-layer {i - 1})"
            return f"{point}: its input, {before}" if kind == "input" else f"{point}: its output, sub-layer {i}'s input"
        if kind == "input":
            return f"residual {i}: x + Dropout(sub-layer {i}), the input of {point}"
        return f"{point}: LayerNorm(x + Dropout(sub-layer {i})), the output of residual connection {i}"

    return words


# --------------------------------------------------------------------------- attention

ATTENTION_ORDER = [
    "w_q:output", "w_k:output", "w_v:output", "split:q", "split:k", "split:v",
    "weights", "mixed", "w_o:input", "w_o:output", "output",
]
ATTENTION_WORDS = {
    "w_q:output": "the projections: Q W^Q (w_q's output)",
    "w_k:output": "the projections: K W^K (w_k's output)",
    "w_v:output": "the projections: V W^V (w_v's output)",
    "split:q": "the split into heads: the queries (B, H, T, K)",
    "split:k": "the split into heads: the keys (B, H, S, K)",
    "split:v": "the split into heads: the values (B, H, S, Kv)",
    "weights": "the weights: softmax(Q K^T / sqrt(d_k)) of every head (B, H, T, S)",
    "mixed": "the mixed values: weights @ V of every head (B, H, T, Kv)",
    "w_o:input": "the merge: Concat(head_1, ..., head_h) (w_o's input, (B, T, H*Kv))",
    "w_o:output": "the output projection (w_o's output)",
    "output": "the module's output",
}
_SOFTMAX = {torch.softmax, F.softmax, Tensor.softmax, torch.special.softmax}
_PRODUCTS = {torch.matmul, Tensor.matmul, Tensor.__matmul__, torch.bmm, Tensor.bmm, torch.einsum,
             F.scaled_dot_product_attention}


class _AttentionFunctions(TorchFunctionMode):
    """Sees the first 4-D softmax (the weights of every head) and, after it, the first
    product of shape (B, H, T, *) (the weights applied to the values); a fused
    F.scaled_dot_product_attention gives the mixed values without weights."""

    def __init__(self, log: StageLog):
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        try:
            self._see(func, out)
        except Exception:  # what the grader records must never change what the code computes
            pass
        return out

    def _see(self, func, out) -> None:
        if isinstance(out, Tensor) and out.dim() == 4:
            if func in _SOFTMAX and "weights" not in self.log.values:
                self.log.add("weights", out)
            elif func in _PRODUCTS and "mixed" not in self.log.values:
                weights = self.log.values.get("weights")
                if func is F.scaled_dot_product_attention or (
                        weights is not None and out.shape[:-1] == weights.shape[:-1]):
                    self.log.add("mixed", out)


@contextmanager
def _record_attention(module: nn.Module, log: StageLog):
    handles, produced = [], {}
    for name, role in (("w_q", "q"), ("w_k", "k"), ("w_v", "v")):
        sub = getattr(module, name, None)
        if isinstance(sub, nn.Module):
            def after(m, args, out, name=name, role=role):
                produced[id(out)] = (role, out)  # the tensor is kept alive, so its id stays its own
                log.add(f"{name}:output", out)
            handles.append(sub.register_forward_hook(after))
    w_o = getattr(module, "w_o", None)
    if isinstance(w_o, nn.Module):
        handles.append(w_o.register_forward_pre_hook(lambda m, args: log.add("w_o:input", args[0])))
        handles.append(w_o.register_forward_hook(lambda m, args, out: log.add("w_o:output", out)))
    handles.append(module.register_forward_hook(lambda m, args, out: log.add("output", out)))
    wrapped = []
    if callable(getattr(module, "split_heads", None)):
        split = module.split_heads

        def split_heads(x, *args, **kwargs):
            out = split(x, *args, **kwargs)
            role = produced.get(id(x), (None,))[0]
            if role is not None and f"split:{role}" not in log.values:
                log.add(f"split:{role}", out)
            return out
        module.split_heads = split_heads
        wrapped.append("split_heads")
    if callable(getattr(module, "merge_heads", None)):
        merge = module.merge_heads

        def merge_heads(x, *args, **kwargs):
            if "mixed" not in log.values:
                log.add("mixed", x)
            return merge(x, *args, **kwargs)
        module.merge_heads = merge_heads
        wrapped.append("merge_heads")
    # The package's module takes its explicit path (softmax, then weights @ V) while its
    # on_weights is set: the same output as its fused kernel, with the weights in sight.
    on_weights = getattr(module, "on_weights", "absent")
    if on_weights is None:
        module.on_weights = lambda weights: None
    try:
        with _AttentionFunctions(log):
            yield
    finally:
        for h in handles:
            h.remove()
        for name in wrapped:
            del module.__dict__[name]
        if on_weights is None:
            module.on_weights = None


ATTENTION_STAGES = StageSpec(
    record=_record_attention,
    describe=lambda key, module: ATTENTION_WORDS[key],
    order=lambda module: ATTENTION_ORDER,
    required=lambda key: key.startswith(("w_", "output")),
)


# --------------------------------------------------------------------------- attention since 2017 (issue 32)


def attention_variant_stages(order: list[str], words: dict[str, str], points: tuple[str, ...] = ()) -> StageSpec:
    """Stages of an attention module that changes multi-head attention (rotary positions,
    grouped-query heads): those of ``ATTENTION_STAGES``, the inputs and outputs of the
    sub-modules ``points`` (``rotary``), and the weights and mixed values always laid out
    per query head, (B, H, T, *): a module that stacks the h/G query heads of a group as
    more queries, (B, G, h/G * T, *) (the package's grouped-query attention), and one that
    copies each key/value head for its group, (B, H, T, *), are compared head by head."""

    @contextmanager
    def record(module: nn.Module, log: StageLog):
        handles, queries = [], []
        handles.append(module.register_forward_pre_hook(
            lambda m, args, kwargs: queries.append(args[0] if args else kwargs.get("query")), with_kwargs=True))
        for point in points:
            sub = getattr(module, point, None)
            if not isinstance(sub, nn.Module):
                continue
            handles.append(sub.register_forward_pre_hook(
                lambda m, args, kwargs, p=point: log.add(f"{p}:input", _tensors(m.forward, args, kwargs)),
                with_kwargs=True))
            handles.append(sub.register_forward_hook(lambda m, args, out, p=point: log.add(f"{p}:output", out)))
        try:
            with _record_attention(module, log):
                yield
        finally:
            for h in handles:
                h.remove()
            heads = getattr(module, "num_heads", None)
            if queries and isinstance(queries[0], Tensor) and queries[0].dim() == 3 and isinstance(heads, int):
                _per_query_head(log, heads, queries[0].size(1))

    return StageSpec(record=record, describe=lambda key, module: _numbered(key, module, lambda k, m: words[k]),
                     order=lambda module: order, required=lambda key: key.startswith(("w_", "output")))


def _per_query_head(log: StageLog, heads: int, length: int) -> None:
    """The weights (B, G, r*T, S) and mixed values (B, G, r*T, Kv) of stacked query heads
    as (B, H, T, *): row i*T + t of group g is query t of head g*r + i."""
    for key in ("weights", "mixed"):
        value = log.values.get(key)
        if not isinstance(value, Tensor) or value.dim() != 4 or value.size(1) == heads:
            continue
        if value.size(1) * value.size(2) == heads * length:
            log.values[key] = value.reshape(value.size(0), heads, length, value.size(-1))  # (B, H, T, *)


ROTARY_ATTENTION_ORDER = ATTENTION_ORDER[:6] + ["rotary:input", "rotary:output"] + ATTENTION_ORDER[6:]
ROTARY_ATTENTION_WORDS = ATTENTION_WORDS | {
    "rotary:input": "the rotation's inputs: each head's q (B, H, T, K) and k (B, H, S, K) (self.rotary's input)",
    "rotary:output": "the rotation: q and k, row t turned by the angles of position offset + t (self.rotary's output)",
}
ROTARY_ATTENTION_STAGES = attention_variant_stages(ROTARY_ATTENTION_ORDER, ROTARY_ATTENTION_WORDS, ("rotary",))

GROUPED_QUERY_WORDS = ATTENTION_WORDS | {
    "w_k:output": "the projections: K W^K, num_kv_heads * d_k features (w_k's output)",
    "w_v:output": "the projections: V W^V, num_kv_heads * d_v features (w_v's output)",
    "split:k": "the split into heads: the keys (B, G, S, K), one per key/value head",
    "split:v": "the split into heads: the values (B, G, S, Kv), one per key/value head",
    "weights": "the weights: softmax(Q K^T / sqrt(d_k)) of every query head against its group's keys, (B, H, T, S)",
    "mixed": "the mixed values: weights @ V of every query head, with its group's values (B, H, T, Kv)",
}
GROUPED_QUERY_STAGES = attention_variant_stages(ATTENTION_ORDER, GROUPED_QUERY_WORDS)
