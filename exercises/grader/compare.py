"""What the grader records from one run of an exercise, and the first place where two runs
differ, said in one line (a shape, an index and two values), never a tensor printout."""

from __future__ import annotations

import math
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

# Float results equal the package's when they agree to about float32 rounding: the same
# formula computed in another order differs by a few units in the last place.
RTOL, ATOL = 1e-4, 1e-5


@dataclass(frozen=True)
class Raised:
    """An exception some code raised: the grader compares its type."""

    type_name: str
    message: str
    where: str = ""  # "exercises/ex01_attention.py line 42" when raised in the learner's file

    @classmethod
    def from_exception(cls, error: BaseException, learner_file: str | None) -> "Raised":
        where = ""
        if learner_file:
            frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == learner_file]
            if frames:
                where = f"{_short_path(learner_file)} line {frames[-1].lineno}"
        return cls(type(error).__name__, str(error).split("\n")[0], where)

    def __str__(self) -> str:
        at = f" ({self.where})" if self.where else ""
        return f"{self.type_name}: {self.message}{at}"


@dataclass(frozen=True)
class Observation:
    """One recorded result: what was computed (``label``) and its value (or a Raised)."""

    label: str
    value: Any


def _short_path(path: str) -> str:
    p = Path(path)
    for parent in p.parents:
        if (parent / "exercises").is_dir() and (parent / "code").is_dir():
            return str(p.relative_to(parent))
    return str(p)


def _fmt(x) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        return "nan" if math.isnan(x) else f"{x:.6g}"
    return str(x)


def _shape(x) -> str:
    return str(tuple(x.shape))


def tensor_difference(expected: Tensor, actual) -> str | None:
    """The first difference between two tensors (shape, dtype, then the first index whose
    values differ and how many do), or None when they agree."""
    if not isinstance(actual, Tensor):
        return f"expected a tensor of shape {_shape(expected)}, got {type(actual).__name__}"
    if actual.shape != expected.shape:
        return f"shape: expected {_shape(expected)}, got {_shape(actual)}"
    if actual.dtype != expected.dtype:
        return f"dtype: expected {expected.dtype}, got {actual.dtype}"
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if expected.is_floating_point():
        close = torch.isclose(actual, expected, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        close = actual == expected
    if bool(close.all()):
        return None
    wrong = (~close).nonzero()
    index = tuple(int(i) for i in wrong[0])
    e, a = expected[index].item(), actual[index].item()
    where = f"at index {index}" if index else "value"
    return (f"{where}: expected {_fmt(e)}, got {_fmt(a)} "
            f"({len(wrong)} of {expected.numel()} values differ)")


def value_difference(expected, actual) -> str | None:
    """The first difference between two recorded values of any kind, or None."""
    if isinstance(expected, Raised) or isinstance(actual, Raised):
        if isinstance(expected, Raised) and isinstance(actual, Raised):
            # the type alone: the same mistake written another way words its error differently
            same = expected.type_name == actual.type_name
            return None if same else f"expected {expected.type_name}: {expected.message}, got {actual}"
        if isinstance(actual, Raised):
            return f"your code raised {actual}"
        return f"expected {expected.type_name}: {expected.message}, got a result"
    if isinstance(expected, Tensor):
        return tensor_difference(expected, actual)
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
            got = f"{type(actual).__name__} of {len(actual)}" if isinstance(actual, (tuple, list)) else type(actual).__name__
            return f"expected a {type(expected).__name__} of {len(expected)} items, got {got}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            diff = value_difference(e, a)
            if diff is not None:
                return f"item {i}: {diff}"
        return None
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return None if actual == expected and type(actual) is type(expected) else \
            f"expected {_fmt(expected)}, got {_fmt(actual)}"
    if isinstance(expected, (int, float)):
        return _number_difference(expected, actual)
    raise TypeError(f"the grader cannot compare values of type {type(expected).__name__}")


def _number_difference(expected: float, actual) -> str | None:
    if isinstance(actual, Tensor) and actual.numel() == 1:
        actual = actual.item()  # a one-element tensor is read as its number
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        try:
            actual = float(actual)  # numpy scalars
        except (TypeError, ValueError):
            return f"expected the number {_fmt(expected)}, got {type(actual).__name__}"
    if math.isclose(actual, expected, rel_tol=RTOL, abs_tol=1e-12) or (math.isnan(actual) and math.isnan(expected)):
        return None
    return f"expected {_fmt(float(expected))}, got {_fmt(float(actual))}"


def first_difference(expected: list[Observation], actual: list[Observation]) -> tuple[str, str] | None:
    """(label, what differs) for the first recorded result where ``actual`` departs from
    ``expected``, or None when every result agrees."""
    for e, a in zip(expected, actual):
        diff = value_difference(e.value, a.value)
        if diff is not None:
            return e.label, diff
    if len(actual) < len(expected):  # cannot happen: a run stops only by raising
        return expected[len(actual)].label, "no result"
    if len(actual) > len(expected):
        return actual[len(expected)].label, f"the package raised {expected[-1].value} before this"
    return None
