"""Argument checks shared by every module, in one message style.

Each checker raises ``ValueError`` (``TypeError`` for a value of the wrong type), worded
``"{name} must be <what was expected>, got {value!r}"``, and returns the value, so that a
constructor reads ``self.d_model = checks.positive_int("d_model", d_model)``.
"""

from __future__ import annotations

import math
from typing import Any, Collection

import torch


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def positive_int(name: str, value: Any) -> int:
    """``value`` if it is an int >= 1 (``True`` is not an int here)."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def non_negative_int(name: str, value: Any) -> int:
    """``value`` if it is an int >= 0."""
    if not _is_int(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


def positive_even_int(name: str, value: Any, why: str = "") -> int:
    """``value`` if it is an even int >= 2; ``why`` says what needs it even."""
    if not _is_int(value) or value < 2 or value % 2:
        reason = f" ({why})" if why else ""
        raise ValueError(f"{name} must be a positive even int{reason}, got {value!r}")
    return value


def positive_number(name: str, value: Any) -> float:
    """``value`` if it is a finite number > 0."""
    if not _is_number(value) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return value


def finite_number(name: str, value: Any, minimum: float | None = None) -> float:
    """``value`` if it is a finite number (not NaN or inf), at least ``minimum`` if given."""
    if not _is_number(value) or not math.isfinite(value) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ValueError(f"{name} must be a finite number{bound}, got {value!r}")
    return value


def index(name: str, value: Any, size: int) -> int:
    """``value`` if it is an int in [0, size): a token id, a position (a ``TypeError`` for a
    float or a bool, which would index silently after a cast)."""
    if not _is_int(value):
        raise TypeError(f"{name} must be an int in [0, {size}), got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise ValueError(f"{name} must be in [0, {size}), got {value!r}")
    return value


def fraction(name: str, value: Any) -> float:
    """``value`` if it is a number in [0, 1): a dropout rate, a smoothing epsilon."""
    if not _is_number(value) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value!r}")
    return value


def one_of(name: str, value: Any, choices: Collection) -> Any:
    """``value`` if it is one of ``choices``; the message lists them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def exporting() -> bool:
    """True while an exporter traces the model (``torch.onnx.export`` with either exporter,
    ``torch.export``, ``torch.jit.trace``). Checks that read a tensor's values or need a
    plain ``int`` size are skipped then: the traced graph has no values to read, and the
    exported graph keeps no Python checks anyway."""
    return torch.jit.is_tracing() or torch.onnx.is_in_onnx_export() or torch.compiler.is_exporting()


def tracing() -> bool:
    """True while ``torch.compile`` or an exporter traces the model (:func:`exporting`).
    Checks that read a tensor's values are skipped then: under ``torch.compile`` such a read
    would split the graph in two and wait for the GPU, and checks needing a plain ``int``
    would see a symbolic size. The eager model keeps every check."""
    return torch.compiler.is_compiling() or exporting()


def tensor(name: str, value: Any) -> torch.Tensor:
    """``value`` if it is a tensor (a ``TypeError`` otherwise)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value
