"""Worked examples small enough to check by hand: one attention head, layer normalisation,
and the LaTeX that puts their numbers on a slide.

- :func:`one_head_steps` runs equation (1) of Vaswani et al., 2017 (Section 3.2.1) on
  projected inputs, one named step at a time (Q, K, V, scores, scaled scores, weights,
  output), so a slide can show every intermediate matrix. Its weights and output equal
  :func:`transformer_lab.attention_weights` and
  :func:`transformer_lab.scaled_dot_product_attention` (tested).
- :func:`layer_norm` is the equation of Ba, Kiros and Hinton (2016), which Section 3.1 puts
  after every residual connection; it equals ``torch.nn.LayerNorm`` (tested);
  :func:`layer_norm_steps` keeps its intermediate values (mean, variance, normalised) for
  one position's vector.
- :func:`next_token_loss` is the training loss without smoothing: the mean over the
  non-padding target positions of -log p(y_t | y_<t, x); it equals ``F.cross_entropy``
  with ``ignore_index`` (tested).
- :func:`bmatrix` and :func:`math_span` write a tensor as a KaTeX ``bmatrix``, rounded for
  the eye, optionally coloured with the theme's ``.query``/``.key``/``.value`` classes.
- :func:`difference_line` prints a check as the slides show it: the largest difference
  measured and the bound the tests hold it to for that dtype, never a bare True/False.

Shapes: B batch, T tokens, D d_model, K d_k, V d_v (the vocabulary, for the loss).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor

#: The roles a matrix can be coloured as: the theme's span classes (custom_lab.scss).
ROLES = ("query", "key", "value", "mask")


#: ``torch.testing.assert_close``'s default tolerances by dtype, (relative, absolute): what
#: the tests allow when they compare the package with PyTorch (tests/teaching/test_by_hand.py
#: checks they are PyTorch's own).
TOLERANCES = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5),
              torch.float64: (1e-7, 1e-7)}


def difference_line(ours: Tensor, expected: Tensor, what: str = "largest difference", sep: str = "\n") -> str:
    """A check as a slide prints it: the largest absolute difference of ``ours`` from
    ``expected``, then (after ``sep``) the bound the tests hold it to, ``assert_close``'s
    default for the dtype, absolute + relative x |expected| per element, with the smallest
    that bound is on these tensors (three digits, rounded down): "largest difference:
    4.8e-07" and "the tests' bound: 1e-05 + 1.3e-06 × |expected| ≥ 1.06e-05 (assert_close,
    float32)"."""
    if not isinstance(ours, Tensor) or not isinstance(expected, Tensor):
        raise TypeError(f"ours and expected must be torch.Tensors, got {type(ours).__name__} and "
                        f"{type(expected).__name__}")
    if ours.shape != expected.shape or ours.dtype != expected.dtype:
        raise ValueError(f"ours and expected must have one shape and dtype, got {tuple(ours.shape)} {ours.dtype} "
                         f"and {tuple(expected.shape)} {expected.dtype}")
    if ours.dtype not in TOLERANCES:
        raise ValueError(f"dtype must be one of {[str(d) for d in TOLERANCES]}, got {ours.dtype}")
    relative, absolute = TOLERANCES[ours.dtype]
    gap = (ours.detach() - expected.detach()).abs().max().item()
    least = absolute + relative * expected.detach().abs().min().item()
    scale = 10.0 ** (math.floor(math.log10(least)) - 2)                   # 3 significant digits,
    least = math.floor(least / scale * (1 + 1e-12)) * scale                 # rounded down: still a lower bound
    name = str(ours.dtype).removeprefix("torch.")
    return (f"{what}: {gap:.1e}{sep}the tests' bound: {absolute:g} + {relative:g} × |expected| ≥ {least:.2e}"
            f" (assert_close, {name})")


def format_number(value: float, decimals: int = 2) -> str:
    """``value`` rounded to ``decimals`` places, trailing zeros dropped: 2.0 -> "2",
    0.5 -> "0.5", 0.7071 -> "0.71"; never "-0"."""
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def bmatrix(t: Tensor, decimals: int = 2) -> str:
    """A 1-D or 2-D tensor as LaTeX ``\\begin{bmatrix} ... \\end{bmatrix}`` (numbers rounded)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"t must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() not in (1, 2):
        raise ValueError(f"t must be a vector or a matrix (1 or 2 dimensions), got shape {tuple(t.shape)}")
    rows = t.detach().cpu().double().reshape(-1, t.shape[-1]).tolist()  # (rows, columns)
    body = r" \\ ".join(" & ".join(format_number(v, decimals) for v in row) for row in rows)
    return r"\begin{bmatrix}" + body + r"\end{bmatrix}"


def math_span(latex: str, role: str | None = None) -> str:
    """Inline maths in display style, as markdown; ``role`` colours it with the theme's class
    (``[$...$]{.query}``), so Q, K, V keep one colour on every slide."""
    if role is not None and role not in ROLES:
        raise ValueError(f"role must be one of {ROLES} or None, got {role!r}")
    math_text = f"$\\displaystyle {latex}$"
    return f"[{math_text}]{{.{role}}}" if role else math_text


@dataclasses.dataclass(frozen=True)
class OneHead:
    """Every intermediate matrix of one attention head (equation (1), Section 3.2.1)."""

    x: Tensor  # (T, D) the tokens' vectors
    q: Tensor  # (T, K) x W^Q
    k: Tensor  # (T, K) x W^K
    v: Tensor  # (T, V) x W^V
    scores: Tensor  # (T, T) Q K^T
    scaled: Tensor  # (T, T) Q K^T / sqrt(d_k)
    weights: Tensor  # (T, T) softmax over each row
    output: Tensor  # (T, V) weights V


def _check_matrix(name: str, t, rows: int | None, shape_name: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2 or (rows is not None and t.shape[0] != rows):
        raise ValueError(f"{name} must have shape {shape_name}, got {tuple(t.shape)}")


def one_head_steps(x: Tensor, w_q: Tensor, w_k: Tensor, w_v: Tensor) -> OneHead:
    """Self-attention of one head on ``x`` (T, D), step by step, without a mask.

    ``w_q`` and ``w_k`` are (D, K), ``w_v`` is (D, V): the head's projections
    (Section 3.2.2, without the bias the paper does not have). Returns :class:`OneHead`.
    """
    _check_matrix("x", x, None, "(T, D)")
    d_model = x.shape[1]
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        _check_matrix(name, w, d_model, f"(D={d_model}, d_k or d_v)")
    if w_q.shape[1] != w_k.shape[1]:
        raise ValueError(f"w_q and w_k must share d_k, got w_q {tuple(w_q.shape)} and w_k {tuple(w_k.shape)}")
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, K), (T, K), (T, V)
    scores = q @ k.T  # (T, T)
    scaled = scores / math.sqrt(q.shape[-1])  # (T, T)
    weights = torch.softmax(scaled, dim=-1)  # (T, T), rows sum to 1
    return OneHead(x, q, k, v, scores, scaled, weights, weights @ v)


def layer_norm(x: Tensor, gain: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """Layer normalisation (Ba, Kiros and Hinton, 2016) over the last dimension of ``x`` (..., D).

        mu = mean_i x_i,  sigma^2 = mean_i (x_i - mu)^2,
        LayerNorm(x) = gain * (x - mu) / sqrt(sigma^2 + eps) + bias

    ``gain`` and ``bias`` are (D,). Each position is normalised over its own D features
    (not over the batch); the variance divides by D, as ``torch.nn.LayerNorm`` does.
    """
    if not isinstance(x, Tensor) or x.dim() < 1:
        raise ValueError(f"x must be a tensor of shape (..., D), got {getattr(x, 'shape', type(x).__name__)}")
    for name, t in (("gain", gain), ("bias", bias)):
        if not isinstance(t, Tensor) or tuple(t.shape) != (x.shape[-1],):
            raise ValueError(f"{name} must have shape (D,) = ({x.shape[-1]},), got {getattr(t, 'shape', t)}")
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1), divided by D
    return gain * (x - mu) / torch.sqrt(var + eps) + bias  # (..., D)


@dataclasses.dataclass(frozen=True)
class LayerNormSteps:
    """Every intermediate value of layer normalisation on ``x`` (..., D)."""

    x: Tensor  # (..., D) the input
    mean: Tensor  # (..., 1) mu
    variance: Tensor  # (..., 1) sigma^2, divided by D
    normalised: Tensor  # (..., D) (x - mu) / sqrt(sigma^2 + eps)
    output: Tensor  # (..., D) gain * normalised + bias


def layer_norm_steps(x: Tensor, gain: Tensor, bias: Tensor, eps: float = 1e-5) -> LayerNormSteps:
    """:func:`layer_norm`, one named step at a time (mean, variance, normalised, output), so
    a slide can show each; ``output`` equals :func:`layer_norm` and ``torch.nn.LayerNorm``
    (tested)."""
    layer_norm(x, gain, bias, eps)  # the same checks, the same error messages
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1)
    normalised = (x - mean) / torch.sqrt(variance + eps)  # (..., D)
    return LayerNormSteps(x, mean, variance, normalised, gain * normalised + bias)


def next_token_loss(logits: Tensor, target: Tensor, pad_id: int = 0) -> Tensor:
    """Cross-entropy of the next token: the mean, over the target positions that are not
    padding, of -log p(y_t | y_<t, x) (Section 5.4 trains on it with label smoothing;
    this is the loss with epsilon_ls = 0, as ``F.cross_entropy(..., ignore_index=pad_id)``).

    ``logits`` (B, T, V), ``target`` (B, T) token ids -> a scalar tensor, in nats.
    """
    if not isinstance(logits, Tensor) or not isinstance(target, Tensor):
        raise TypeError(f"logits and target must be torch.Tensors, got {type(logits).__name__} and "
                        f"{type(target).__name__}")
    if logits.dim() != 3 or tuple(target.shape) != tuple(logits.shape[:2]):
        raise ValueError(f"logits must be (B, T, V) and target (B, T), got {tuple(logits.shape)} and "
                         f"{tuple(target.shape)}")
    if not (target != pad_id).any():
        raise ValueError(f"target must hold at least one token that is not padding (pad_id={pad_id})")
    log_p = logits.float().log_softmax(dim=-1)  # (B, T, V)
    picked = log_p.gather(-1, target[..., None])[..., 0]  # log p(y_t), (B, T)
    keep = target != pad_id  # (B, T): no loss on padding
    return -picked[keep].mean()
