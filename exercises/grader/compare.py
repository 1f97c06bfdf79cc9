"""What the grader records from one run of an exercise, and the first place where two runs
differ, said in one line (a shape, an index and two values), never a tensor printout.

Besides values, a run records three kinds of result: ``Raised`` (an exception, compared on
its type and its message), ``Mutated`` (the code changed one of its inputs in place) and
``Claim`` (a property that holds whatever the random draw, such as "each output entry is 0
or weight / (1 - p)" under dropout, compared on whether it holds)."""

from __future__ import annotations

import math
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

# Float results equal the package's when they agree to about float32 rounding: the same
# formula computed in another order differs by a few units in the last place. Half
# precision keeps 11 bits: a softmax taken in float16 and one taken in float32 and cast
# back differ by a few thousandths.
RTOL, ATOL = 1e-4, 1e-5
HALF_RTOL, HALF_ATOL = 1e-2, 2e-3

_SIZE = re.compile(r"torch\.Size\(\[([^\]]*)\]\)")
_INT_LIST = re.compile(r"\[(\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*)\]")
_TUPLE = re.compile(r"\((\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*)\)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?|(?<![\w.])-?\d+[eE][-+]?\d+")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def _shape(numbers: str) -> str:
    items = [n.strip() for n in numbers.split(",") if n.strip()]
    return "(" + ", ".join(items) + ")"


def normalise_message(message: str) -> str:
    """An exception's message in one canonical spelling: shapes written as (2, 3) whether
    they came as torch.Size([2, 3]), [2, 3] or (2, 3,); numbers as %g (4.0 is 4, 1e-09 is
    1e-9); memory addresses and quotes made uniform. The values stay: "dimension 1" and
    "dimension 3" are different errors."""
    text = " ".join(message.split())
    text = _ADDRESS.sub("0x?", text)
    text = text.replace('"', "'")
    text = _SIZE.sub(lambda m: _shape(m.group(1)), text)
    text = _INT_LIST.sub(lambda m: _shape(m.group(1)), text)
    text = _TUPLE.sub(lambda m: _shape(m.group(1)), text)
    return _NUMBER.sub(lambda m: f"{float(m.group(0)):g}", text)


@dataclass(frozen=True)
class Raised:
    """An exception some code raised: it equals another on its type and its message
    (normalised by ``normalise_message``), never on its type alone."""

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

    @property
    def key(self) -> tuple[str, str]:
        return self.type_name, normalise_message(self.message)

    def __str__(self) -> str:
        at = f" ({self.where})" if self.where else ""
        return f"{self.type_name}: {self.message}{at}"


@dataclass(frozen=True)
class Mutated:
    """The code changed one of its inputs in place (``x += ...``, ``x.masked_fill_``):
    the grader's next call would read the changed tensor, so the run stops there."""

    name: str

    def __str__(self) -> str:
        return (f"your code changed its input `{self.name}` in place (an in-place operation such as "
                f"`{self.name} += ...`, `{self.name} /= ...` or a method ending in _); compute a new "
                f"tensor instead, `{self.name} = {self.name} + ...`")


@dataclass(frozen=True)
class Claim:
    """A property checked on one call's result, true or not whatever the random draw
    (dropout): runs agree when it holds in both or in neither. ``detail`` says what was
    found, for the report."""

    holds: bool
    detail: str = ""


@dataclass(frozen=True)
class Observation:
    """One recorded result: what was computed (``label``) and its value (or a Raised, a
    Mutated, a Claim)."""

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


def _shape_of(x) -> str:
    return str(tuple(x.shape))


def tensor_difference(expected: Tensor, actual) -> str | None:
    """The first difference between two tensors (shape, dtype, then the first index whose
    values differ and how many do), or None when they agree."""
    if not isinstance(actual, Tensor):
        return f"expected a tensor of shape {_shape_of(expected)}, got {type(actual).__name__}"
    if actual.shape != expected.shape:
        return f"shape: expected {_shape_of(expected)}, got {_shape_of(actual)}"
    if actual.dtype != expected.dtype:
        return f"dtype: expected {expected.dtype}, got {actual.dtype}"
    actual, expected = actual.detach().cpu(), expected.detach().cpu()
    if expected.is_floating_point():
        half = expected.dtype in (torch.float16, torch.bfloat16)
        rtol, atol = (HALF_RTOL, HALF_ATOL) if half else (RTOL, ATOL)
        close = torch.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
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
    special = (Raised, Mutated, Claim)
    if isinstance(expected, special) or isinstance(actual, special):
        return _special_difference(expected, actual)
    if isinstance(expected, Tensor):
        return tensor_difference(expected, actual)
    if isinstance(expected, dict):  # named inputs of a call (the stage locator's)
        if not isinstance(actual, dict) or list(actual) != list(expected):
            got = ", ".join(actual) if isinstance(actual, dict) else type(actual).__name__
            return f"expected {', '.join(expected) or 'no tensors'}, got {got or 'no tensors'}"
        for name, e in expected.items():
            diff = value_difference(e, actual[name])
            if diff is not None:
                return f"{name}: {diff}"
        return None
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


def _special_difference(expected, actual) -> str | None:
    if isinstance(expected, Raised) and isinstance(actual, Raised):
        return None if expected.key == actual.key else f"expected {expected}, got {actual}"
    if isinstance(expected, Mutated) and isinstance(actual, Mutated):
        return None if expected.name == actual.name else f"expected {expected.name} changed, got {actual.name}"
    if isinstance(expected, Claim) and isinstance(actual, Claim):
        if expected.holds == actual.holds:
            return None
        return f"does not hold: {actual.detail}" if expected.holds else f"holds where it should not ({actual.detail})"
    if isinstance(actual, Raised):
        return f"your code raised {actual}"
    if isinstance(actual, Mutated):
        return str(actual)
    if isinstance(expected, Raised):
        return f"expected {expected.type_name}: {expected.message}, got a result"
    if isinstance(expected, Mutated):
        return f"expected the input `{expected.name}` changed in place, got it unchanged"
    return f"expected a checked property, got {type(actual).__name__}"


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


def differences(expected: list[Observation], actual: list[Observation]) -> list[tuple[int, str, str]]:
    """Every position where ``actual`` departs from ``expected``: (index, label, what
    differs). A run that ended early or went on longer differs at its first extra or
    missing result; a result recorded under another label differs there too."""
    found = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e.label != a.label:
            found.append((i, e.label, f"expected a result for {e.label}, got one for {a.label}"))
            return found  # the runs are no longer aligned
        diff = value_difference(e.value, a.value)
        if diff is not None:
            found.append((i, e.label, diff))
    if len(actual) < len(expected):
        last = actual[-1].value if actual else None
        if not (found and found[-1][0] == len(actual) - 1 and isinstance(last, (Raised, Mutated))):
            found.append((len(actual), expected[len(actual)].label, f"no result (the run ended: {last})"))
    elif len(actual) > len(expected):
        found.append((len(expected), actual[len(expected)].label, f"the run ended before this: {expected[-1].value}"))
    return found


def first_difference(expected: list[Observation], actual: list[Observation]) -> tuple[str, str] | None:
    """(label, what differs) for the first recorded result where ``actual`` departs from
    ``expected``, or None when every result agrees."""
    found = differences(expected, actual)
    return (found[0][1], found[0][2]) if found else None
