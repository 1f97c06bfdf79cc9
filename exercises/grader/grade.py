"""Grade one exercise: run each part on the learner's code, the package and the known
mistakes (see core.py), and write the report a learner reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, SimpleNamespace

import torch

from .compare import Raised, _short_path, first_difference
from .core import Exercise, Mistake, NotStarted, Part, collect, load_module, mistake_namespace, solution_line
from .slides import slide_reference

PASSED, NOT_STARTED, PARTLY, WRONG = "passed", "not started", "partly done", "wrong"


@dataclass
class PartResult:
    part: Part
    status: str
    lines: list[str] = field(default_factory=list)
    mistake: Mistake | None = None


@dataclass
class Result:
    """What the grader found: ``status`` (passed, not started, partly done, wrong), the
    known ``mistake`` it diagnosed if any, and ``report()``, the text a learner reads."""

    exercise: Exercise
    status: str
    parts: list[PartResult]
    path: str
    show_solution: bool = False
    problem: str = ""  # the file does not import or lacks a name

    @property
    def mistake(self) -> Mistake | None:
        return next((p.mistake for p in self.parts if p.mistake is not None), None)

    def headline(self) -> str:
        e = self.exercise
        what = self.status
        if self.mistake is not None:
            what = f"wrong: {self.mistake.name}"
        return f"{e.number:2d}  {e.title:<52} {what}"

    def report(self) -> str:
        e = self.exercise
        lines = [f"Exercise {e.number}, {e.title} ({self.path}): {self.status}"]
        if self.problem:
            lines.append(f"  {self.problem}")
        for part in self.parts:
            lines += [f"  {part.part.name}: {part.status}" + (f". {part.lines[0]}" if part.lines else "")]
            lines += [f"    {line}" for line in part.lines[1:]]
        if self.status == PASSED or self.show_solution:
            lines.append(f"  {solution_line(e)}")
        elif self.status in (NOT_STARTED, PARTLY):
            lines.append(f"  read first: {slide_reference(e.slide)}")
        return "\n".join(lines)


def grade(exercise: Exercise, module: ModuleType | None = None, path: str | Path | None = None,
          show_solution: bool = False) -> Result:
    """Grade the learner's ``module`` (or the file at ``path``, by default the exercise's
    own file under exercises/)."""
    path = Path(path) if path is not None else exercise.path
    shown = _short_path(str(getattr(module, "__file__", None) or path))
    result = Result(exercise, WRONG, [], shown, show_solution)
    if module is None:
        try:
            module = load_module(path)
        except Exception as error:  # a syntax error, a failing import: the learner's to fix
            result.problem = f"the file does not import: {_import_problem(error, str(path))}"
            return result
    missing = [name for name in exercise.reference if not hasattr(module, name)]
    if missing:
        result.problem = f"{shown} defines no {', '.join(missing)}: keep the stub's names"
        return result
    learner_file = getattr(module, "__file__", None)
    for part in exercise.parts:
        graded = grade_part(exercise, part, module, learner_file)
        if graded.status == WRONG:  # an earlier part's error is said instead of a diagnosis of this one
            graded = _after_earlier_parts(exercise, part, module, learner_file, result.parts) or graded
        result.parts.append(graded)
    result.status = _overall([p.status for p in result.parts])
    return result


def _after_earlier_parts(exercise: Exercise, part: Part, module, learner_file, earlier: list[PartResult]):
    """A part that calls an earlier, wrong part of the learner's (scaled_dot_product_attention
    calling attention_weights) is graded again with the package's version of that part; if it
    passes then, the report says to fix the earlier part first."""
    wrong = {p.part.name: exercise.reference[p.part.name] for p in earlier
             if p.status == WRONG and p.part.name in exercise.reference}
    if not wrong or not isinstance(module, ModuleType):
        return None
    saved = {name: getattr(module, name) for name in wrong}
    try:
        for name, package_obj in wrong.items():
            setattr(module, name, package_obj)  # the learner's functions read their module's globals
        retry = grade_part(exercise, part, module, learner_file)
    finally:
        for name, obj in saved.items():
            setattr(module, name, obj)
    if retry.status != PASSED:
        return None
    names = " and ".join(wrong)
    return PartResult(part, WRONG, [f"equals the package once {names} is the package's: fix {names} first"])


def _import_problem(error: Exception, path: str) -> str:
    if isinstance(error, SyntaxError):
        return f"SyntaxError: {error.msg} (line {error.lineno})"
    return str(Raised.from_exception(error, path))


def _overall(statuses: list[str]) -> str:
    if WRONG in statuses:
        return WRONG
    if all(s == PASSED for s in statuses):
        return PASSED
    if all(s == NOT_STARTED for s in statuses):
        return NOT_STARTED
    return PARTLY


def grade_part(exercise: Exercise, part: Part, module, learner_file: str | None) -> PartResult:
    try:
        learner = collect(part, module, learner_file)
    except NotStarted:
        return PartResult(part, NOT_STARTED)
    reference = collect(part, SimpleNamespace(**exercise.reference))
    broken = [o for o in reference if isinstance(o.value, Raised)]
    if broken:  # the answer key itself failed: the grader's bug, not the learner's
        raise RuntimeError(f"exercise {exercise.number}, {part.name}: the package raised {broken[0].value} "
                           f"in {broken[0].label}")
    difference = first_difference(reference, learner)
    failing = failing_properties(part, module)
    if difference is None and not failing:
        checked = "; ".join(p.says for p in part.properties)
        lines = [f"equals the package on all {len(reference)} results"]
        return PartResult(part, PASSED, lines + ([f"checked: {checked}"] if checked else []))
    mistake = diagnose(exercise, part, module, learner)
    if mistake is not None:
        lines = [f'known mistake "{mistake.name}": {mistake.says}', f"see {slide_reference(mistake.slide)}"]
        return PartResult(part, WRONG, lines, mistake)
    if difference is None:
        lines = ["equals the package on these inputs, but a property of the paper does not hold"]
    else:
        label, what = difference
        lines = [f"first difference from the package, in {label}: {what}"]
    lines += [f"does not hold: {says}" for says in failing]
    lines.append(f"see {slide_reference(exercise.slide)}")
    return PartResult(part, WRONG, lines)


def diagnose(exercise: Exercise, part: Part, module, learner) -> Mistake | None:
    """The first known mistake of ``part`` that the learner's code reproduces."""
    for mistake in part.mistakes:
        if mistake.detect is not None:
            try:
                if mistake.detect(module):
                    return mistake
            except Exception:  # a detector that cannot read the module did not match
                pass
            continue
        if first_difference(collect(part, mistake_namespace(exercise, mistake), against=learner), learner) is None:
            return mistake
    return None


def failing_properties(part: Part, module) -> list[str]:
    failing = []
    for prop in part.properties:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            try:
                holds = bool(prop.holds(module))
            except Exception:  # raising counts as not holding
                holds = False
        if not holds:
            failing.append(prop.says)
    return failing
