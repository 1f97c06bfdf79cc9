"""The grader's machinery.

An exercise has parts (the functions or classes the learner writes, in order). A part's
``run(ns, rec)`` builds seeded inputs, calls the code found in the namespace ``ns`` and
records its results with ``rec``. The same run is made three ways: on the learner's module,
on the package (the answer key), and on each known mistake, a namespace where one name is
replaced by a function or class that reproduces the mistake from the package's own code.
The learner passes when every result equals the package's; otherwise the first mistake
whose results all equal the learner's names the error, and when none does, the report gives
the first result that differs.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

import torch

from .compare import Observation, Raised, _short_path, value_difference
from .slides import slide_reference

EXERCISES_DIR = Path(__file__).resolve().parent.parent


class NotStarted(Exception):
    """The learner's code raised NotImplementedError: the stub is not written yet."""


class _Stop(Exception):
    """A run ends at its first exception (recorded as a Raised result), or at its first
    result that differs from those it is compared ``against``."""


class Recorder:
    """Collects a run's results; ``rec(label, fn)`` calls ``fn()`` and records its value,
    ``rec.call(label, fn)`` calls it without recording (building a module, say)."""

    def __init__(self, learner_file: str | None, against: list[Observation] | None = None):
        self.learner_file = learner_file
        self.against = against  # stop at the first result that differs from these
        self.observations: list[Observation] = []

    def call(self, label: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except NotImplementedError as error:
            raise NotStarted(label) from error
        except Exception as error:  # the learner's bug, recorded like any result
            self.observations.append(Observation(label, Raised.from_exception(error, self.learner_file)))
            raise _Stop from error

    def __call__(self, label: str, fn: Callable[[], Any]) -> Any:
        value = self.call(label, fn)
        recorded = _detach(value)
        self.observations.append(Observation(label, recorded))
        if self.against is not None:
            i = len(self.observations) - 1
            if i >= len(self.against) or value_difference(recorded, self.against[i].value) is not None:
                raise _Stop  # a mistake that already differs from the learner's code cannot be theirs
        return value


def _detach(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [_detach(v) for v in value]
    if isinstance(value, tuple):  # a named tuple too (torch.return_types) is compared as a tuple
        return tuple(_detach(v) for v in value)
    return value


@dataclass(frozen=True)
class Mistake:
    """A known mistake: ``replace`` maps names of the exercise's namespace to code that
    makes the mistake (built from the package's), or ``detect`` recognises it in the
    learner's module directly (for mistakes of structure, not of values)."""

    name: str
    says: str  # one sentence: what was done and what the paper does
    slide: str  # a key of slides.SLIDES
    replace: dict[str, Any] = field(default_factory=dict)
    detect: Callable[[Any], bool] | None = None


@dataclass(frozen=True)
class Property:
    """A property the paper states, checked on the learner's code: ``holds(ns)``."""

    says: str
    holds: Callable[[Any], bool]


@dataclass(frozen=True)
class Part:
    """One function or class of an exercise: ``names`` are what its run reads from the
    namespace (the learner must define them), ``solution`` the package's answer."""

    name: str
    run: Callable[[Any, Recorder], None]
    solution: Any
    mistakes: tuple[Mistake, ...] = ()
    properties: tuple[Property, ...] = ()


@dataclass(frozen=True)
class Exercise:
    number: int
    stem: str  # the learner's file: exercises/<stem>.py
    title: str
    slide: str  # a key of slides.SLIDES
    reference: dict[str, Any]  # the package's objects under the learner's names
    parts: tuple[Part, ...]

    @property
    def path(self) -> Path:
        return EXERCISES_DIR / f"{self.stem}.py"


def collect(part: Part, ns, learner_file: str | None = None,
            against: list[Observation] | None = None) -> list[Observation]:
    """Run ``part`` on ``ns`` with the global random state saved and restored, so that a
    learner's notebook keeps its own; raises NotStarted for a stub. With ``against``, the
    run stops at its first result that differs from those."""
    rec = Recorder(learner_file, against)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            part.run(ns, rec)
        except _Stop:
            pass
    return rec.observations


def load_module(path: Path) -> ModuleType:
    """Import a learner's file by path, fresh each time (a notebook re-checks after an edit)."""
    name = f"_learner_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def mistake_namespace(exercise: Exercise, mistake: Mistake) -> SimpleNamespace:
    return SimpleNamespace(**{**exercise.reference, **mistake.replace})


def solution_line(exercise: Exercise) -> str:
    names = []
    for part in exercise.parts:
        obj = inspect.unwrap(part.solution)  # a decorated function's own source, not the decorator's
        qualname = getattr(obj, "__qualname__", part.name)
        try:
            where = f"{_short_path(inspect.getsourcefile(obj))} line {inspect.getsourcelines(obj)[1]}"
        except (OSError, TypeError):
            where = "transformer_lab"
        names.append(f"{obj.__module__}.{qualname} ({where})")
    return f"solution: {'; '.join(names)}; slide: {slide_reference(exercise.slide)}"
