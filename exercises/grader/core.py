"""The grader's machinery.

An exercise has parts (the functions or classes the learner writes, in order). A part's
``run(ns, rec)`` builds seeded inputs, calls the code found in the namespace ``ns`` and
records its results with ``rec``. The same run is made three ways: on the learner's module,
on the package (the answer key), and on each known mistake, a namespace where one name is
replaced by a function or class that reproduces the mistake from the package's own code.
The learner passes when every result equals the package's. A known mistake is named only
when every one of its results equals the learner's (an exception on its type and its
message, at the same call); a mistake that agrees where the learner's code first goes wrong
but not everywhere is reported as "looks like", with what differs.

The package's and the mistakes' results do not depend on the learner: they are computed
once per process and kept (``observations``).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

import torch
from torch import Tensor

from .compare import Mutated, Observation, Raised, _short_path
from .slides import slide_reference

EXERCISES_DIR = Path(__file__).resolve().parent.parent


class NotStarted(Exception):
    """The learner's code raised NotImplementedError: the stub is not written yet."""


class _Stop(Exception):
    """A run ends at its first exception or in-place change of an input (recorded like a
    result), or, when a stage is probed, after the probed call."""


class Recorder:
    """Collects a run's results; ``rec(label, fn)`` calls ``fn()`` and records its value,
    ``rec.call(label, fn)`` calls it without recording (building a module, say).

    ``rec.watch(x=x, ...)`` names the run's inputs: after every call each is compared with
    its value when watched, and a changed one ends the run with a ``Mutated`` result.
    ``module=`` marks a call of a layer; when the recorder ``probe``s that call's label, the
    layer's stages (``stages.StageSpec``) are recorded in ``stage_log``."""

    def __init__(self, learner_file: str | None, probe: str | None = None, stages=None):
        self.learner_file = learner_file
        self.observations: list[Observation] = []
        self.watched: list[tuple[str, Tensor, Tensor]] = []
        self.probe, self.stages = probe, stages
        self.stage_log = None  # the probed call's stages, once it ran
        self._pending = stages.new_log() if stages is not None else None

    def watch(self, **tensors) -> None:
        """Watch each tensor under its parameter's name (a dict of them: each value)."""
        for name, t in tensors.items():
            for tensor in (t.values() if isinstance(t, dict) else [t]):
                if isinstance(tensor, Tensor):
                    self.watched.append((name, tensor, tensor.detach().clone()))

    def call(self, label: str, fn: Callable[[], Any], module=None) -> Any:
        try:
            with ExitStack() as stack:
                if self.probe is not None and module is not None and self.stages is not None:
                    self._pending.module = module
                    stack.enter_context(self.stages.record(module, self._pending))
                value = fn()
        except NotImplementedError as error:
            raise NotStarted(label) from error
        except _Stop:
            raise
        except Exception as error:  # the learner's bug, recorded like any result
            self.observations.append(Observation(label, Raised.from_exception(error, self.learner_file)))
            self._end_probe(label, raised=True)
            raise _Stop from error
        changed = self._changed_input()
        if changed is not None:
            self.observations.append(Observation(label, Mutated(changed)))
            self._end_probe(label, raised=True)
            raise _Stop
        return value

    def __call__(self, label: str, fn: Callable[[], Any], module=None) -> Any:
        value = self.call(label, fn, module)
        self.observations.append(Observation(label, detach(value)))
        self._end_probe(label)
        return value

    def _changed_input(self) -> str | None:
        for name, t, snapshot in self.watched:
            if not _unchanged(t.detach(), snapshot):
                return name
        return None

    def _end_probe(self, label: str, raised: bool = False) -> None:
        """At the probed label keep the stages recorded since the previous result (the
        calls that produced it) and stop; at any other result start a new record."""
        if self.probe is None or self.stages is None:
            return
        if label == self.probe:
            self.stage_log = self._pending
            self.stage_log.raised = raised
            raise _Stop
        self._pending = self.stages.new_log()


def _unchanged(t: Tensor, snapshot: Tensor) -> bool:
    if t.shape != snapshot.shape or t.dtype != snapshot.dtype:
        return False
    if t.is_floating_point():  # NaN where it was NaN counts as unchanged
        return bool(torch.isclose(t, snapshot, rtol=0.0, atol=0.0, equal_nan=True).all())
    return torch.equal(t, snapshot)


def detach(value):
    """A recorded copy of a result: tensors cloned (a later in-place change cannot alter
    it), tuples and lists element by element."""
    if isinstance(value, Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [detach(v) for v in value]
    if isinstance(value, tuple):  # a named tuple too (torch.return_types) is compared as a tuple
        return tuple(detach(v) for v in value)
    if isinstance(value, dict):
        return {k: detach(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Mistake:
    """A known mistake: ``replace`` maps names of the exercise's namespace to code that
    makes the mistake (built from the package's), or ``detect`` recognises it in the
    learner's module directly (for mistakes of structure, not of values; a mistake with
    both is detected in the learner's code and run, from ``replace``, against a learner's
    tests). ``hint`` completes "a test that ... would catch it": the property a learner's
    test must check to catch it (the test-writing exercises print it for a survivor)."""

    name: str
    says: str  # one sentence: what was done and what the paper does
    slide: str  # a key of slides.SLIDES
    replace: dict[str, Any] = field(default_factory=dict)
    detect: Callable[[Any], bool] | None = None
    hint: str = ""


@dataclass(frozen=True)
class Property:
    """A property the paper states, checked on the learner's code: ``holds(ns)``."""

    says: str
    holds: Callable[[Any], bool]


@dataclass(frozen=True)
class Part:
    """One function or class of an exercise: ``names`` are what its run reads from the
    namespace (the learner must define them), ``solution`` the package's answer.
    ``stages`` (layers only) says how to record a call's stages so that an unnamed error is
    located at the first stage that differs from the package's."""

    name: str
    run: Callable[[Any, Recorder], None]
    solution: Any
    mistakes: tuple[Mistake, ...] = ()
    properties: tuple[Property, ...] = ()
    stages: Any = None


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


def collect(part: Part, ns, learner_file: str | None = None) -> list[Observation]:
    """Run ``part`` on ``ns`` with the global random state saved and restored, so that a
    learner's notebook keeps its own; raises NotStarted for a stub."""
    return _run(part, ns, Recorder(learner_file)).observations


def probe_stages(part: Part, ns, label: str, learner_file: str | None = None):
    """The stages of the layer call recorded as ``label`` (None when that call is not a
    layer's or the run ended before it)."""
    rec = _run(part, ns, Recorder(learner_file, probe=label, stages=part.stages))
    return rec.stage_log


def _run(part: Part, ns, rec: Recorder) -> Recorder:
    with torch.random.fork_rng(devices=[]), one_thread():
        torch.manual_seed(0)
        try:
            part.run(ns, rec)
        except _Stop:
            pass
    return rec


@contextmanager
def one_thread():
    """The grader's tensors are tiny: one thread runs them fastest, and many times faster
    than several on a busy machine (a layer norm of 84 numbers took 8 ms with two threads
    on two shared cores, against well under 1 ms with one). The learner's setting comes back."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


_OBSERVED: dict[tuple, list[Observation]] = {}


def observations(exercise: Exercise, part: Part, mistake: Mistake | None = None) -> list[Observation]:
    """The results of ``part`` run on the package (``mistake`` None) or on a known
    mistake. They do not depend on the learner, so each is computed once per process; the
    grader's tests check that a kept result equals a fresh run."""
    key = (exercise.number, exercise.stem, part.name, None if mistake is None else mistake.name)
    if key not in _OBSERVED:
        ns = SimpleNamespace(**exercise.reference) if mistake is None else mistake_namespace(exercise, mistake)
        _OBSERVED[key] = collect(part, ns)
    return _OBSERVED[key]


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
