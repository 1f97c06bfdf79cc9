"""Looking inside the model: tensor shapes, gradient norms, source code (for the slides).

These helpers compute what the deck shows: the shape of one batch at every step of the
model (so no slide types a shape by hand), the gradient norm of every layer at
initialisation (post-LN versus pre-LN, Section 3.1), and the package's own source code
(so a slide that shows code cannot drift from it).
"""

from __future__ import annotations

import ast
import inspect
import textwrap

import torch
from torch import Tensor, nn

from ..model import Transformer
from ..training import LabelSmoothingLoss


def trace_shapes(model: Transformer, src: Tensor, tgt: Tensor) -> list[tuple[str, tuple[int, ...]]]:
    """Run ``model(src, tgt)`` and record the output shape of each top-level step.

    Returns ``[(step name, shape), ...]`` in execution order: embeddings, positions,
    every encoder and decoder layer, the output projection.
    """
    records: list[tuple[str, tuple[int, ...]]] = [("src tokens", tuple(src.shape)), ("tgt tokens", tuple(tgt.shape))]
    watched = {
        "src_embed": model.src_embed if model.src_embed is not model.tgt_embed else None,
        "src_positions": model.src_positions,
        "tgt_positions": model.tgt_positions,
        "output_projection": model.output_projection,
    }
    watched.update({f"encoder.layers.{i}": layer for i, layer in enumerate(model.encoder.layers)})
    watched.update({f"decoder.layers.{i}": layer for i, layer in enumerate(model.decoder.layers)})
    handles = []
    for name, module in watched.items():
        if module is None:
            continue

        def hook(_module, _inputs, output, name=name):
            records.append((name, tuple(output.shape)))  # every step returns one tensor

        handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            model(src, tgt)
    finally:
        for handle in handles:
            handle.remove()
    return records


def layer_gradient_norms(model: Transformer, src: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> dict[str, list[float]]:
    """Gradient norm of each encoder and decoder layer's parameters after one backward pass.

    ``{"encoder": [norm of layer 0, ...], "decoder": [...]}``. At initialisation a post-LN
    stack (the paper's) gives the last layers much larger gradients than the first, which
    is why it needs the learning-rate warm-up; pre-LN keeps them even.
    """
    model.zero_grad(set_to_none=True)
    LabelSmoothingLoss(0.1, ignore_index=model.config.pad_id)(model(src, tgt_in), tgt_out).backward()

    def norm(layer: nn.Module) -> float:
        grads = [p.grad.norm() ** 2 for p in layer.parameters() if p.grad is not None]
        return float(torch.stack(grads).sum().sqrt())

    result = {
        "encoder": [norm(layer) for layer in model.encoder.layers],
        "decoder": [norm(layer) for layer in model.decoder.layers],
    }
    model.zero_grad(set_to_none=True)
    return result


def gradient_norms_by_placement(seed: int = 0, num_layers: int = 6) -> dict[str, list[float]]:
    """The post-LN slide's measurement: per decoder layer, the gradient norm after one
    backward pass of the label-smoothed loss, at initialisation, for a post-LN model (the
    paper's, ``"post-LN (paper)"``) and a pre-LN one (``"pre-LN"``), d_model 128, 4 heads,
    vocabulary 1,000, a batch of 16 random sentences; ``seed`` draws the batch and both
    initialisations. The global random state is left as it was."""
    from ..model import Transformer, TransformerConfig

    state = torch.get_rng_state()
    try:
        generator = torch.Generator().manual_seed(seed)
        src = torch.randint(4, 1000, (16, 20), generator=generator)  # (B, S)
        tgt = torch.randint(4, 1000, (16, 21), generator=generator)  # (B, T + 1)
        norms = {}
        for name, norm_first in (("post-LN (paper)", False), ("pre-LN", True)):
            torch.manual_seed(seed)
            config = TransformerConfig(1000, 1000, d_model=128, num_heads=4, d_ff=512, num_layers=num_layers,
                                       dropout=0.0, norm_first=norm_first)
            norms[name] = layer_gradient_norms(Transformer(config), src, tgt[:, :-1], tgt[:, 1:])["decoder"]
        return norms
    finally:
        torch.set_rng_state(state)


def source_code(obj, start: str | None = None, stop: str | None = None, docstring: bool = False) -> str:
    """The source of a function, class or method of the package, as text.

    ``start``/``stop``: keep the lines from the first one containing ``start`` up to,
    not including, the first later one containing ``stop``. ``docstring=False`` drops the
    docstring so a slide shows the code.
    """
    text = textwrap.dedent(inspect.getsource(obj))
    if not docstring:
        text = _drop_docstring(text)
    lines = text.splitlines()
    if start is not None:
        index = next((i for i, line in enumerate(lines) if start in line), None)
        if index is None:
            raise ValueError(f"start={start!r} does not occur in the source of {obj.__qualname__}")
        lines = lines[index:]
    if stop is not None:
        index = next((i for i, line in enumerate(lines) if i > 0 and stop in line), None)
        if index is None:
            raise ValueError(f"stop={stop!r} does not occur in the source of {obj.__qualname__}")
        lines = lines[:index]
    return textwrap.dedent("\n".join(lines)).rstrip() + "\n"


def source_markdown(obj, **options) -> str:
    """:func:`source_code` inside a fenced Python block (for ``#| output: asis`` cells)."""
    return "```python\n" + source_code(obj, **options) + "```\n"


def _drop_docstring(text: str) -> str:
    """Remove the docstring of the (single) function or class in ``text``."""
    tree = ast.parse(text)
    node = tree.body[0]
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        lines = text.splitlines()
        first, last = body[0].lineno - 1, body[0].end_lineno  # 0-based start, exclusive end
        return "\n".join(lines[:first] + lines[last:])
    return text
